"""What a user sees from each alert of the monitoring role: for every alert, input series on which it fires
(and the labels and annotations it must then carry) and series on which it stays silent.

tests/integration/test_alerts.py turns these cases into Prometheus unit test files and runs them with
promtool against the rule groups the role's template renders. Written from the alert's documented meaning
(docs/monitoring.md), not from the rule text: a changed expression, threshold, ``for`` duration, label or
annotation fails a case.

Each case: ``alert``; ``for_min`` (minutes the condition must hold: the case checks that it is silent one
minute earlier and fires then); ``dcgm`` (the series come from the DCGM exporter: the case runs once with the
node label ``Hostname`` and once with ``hostname``); ``keep`` (the series labels the alert keeps; None: all of
them); ``labels`` (the rule's own); ``fire`` and ``silent`` (series name -> promtool values, a ``{node}``
label added for DCGM series); ``summary`` and ``description`` (the annotations of the firing case).
"""
from __future__ import annotations

NODE = 'gpu-node-1'
# what the DCGM exporter labels a GPU with (besides its node label) and the target labels of its scrape
GPU = {'gpu': '0', 'UUID': 'GPU-5f1e2d3c-9a8b-4c7d-8e6f-102938475610', 'device': 'nvidia0',
       'modelName': 'NVIDIA A100-SXM4-80GB', 'instance': '10.128.2.15:9400', 'job': 'nvidia-dcgm-exporter'}
# a MIG instance used by a pod (the exporter's pod attribution)
MIG = dict(GPU, GPU_I_PROFILE='3g.40gb', GPU_I_ID='1', namespace='ml', pod='trainer-0', container='main')
KSM = {'node': NODE, 'job': 'kube-state-metrics', 'instance': '10.128.0.9:8080'}
GPU_RES = dict(KSM, resource='nvidia_com_gpu', unit='integer')
MIG_STATE = 'kube_node_labels{label_nvidia_com_mig_config_state="%s"}'
EXPORTER = {'job': 'nvidia-dcgm-exporter', 'instance': '10.128.2.15:9400', 'namespace': 'gpu-operator',
            'pod': 'nvidia-dcgm-exporter-x7k2p', 'service': 'nvidia-dcgm-exporter', 'endpoint': 'gpu-metrics'}
BY_GPU = ('Hostname', 'gpu', 'UUID')
FB_MIB = 40000  # framebuffer of the MIG instance: used + free


def _fb(percent):
    used = percent * FB_MIB / 100
    return {'DCGM_FI_DEV_FB_USED': '%gx30' % used, 'DCGM_FI_DEV_FB_FREE': '%gx30' % (FB_MIB - used)}


def cases(settings):
    """The cases for the role settings ``settings`` (names without the monitoring_ prefix)."""
    mem, temp = float(settings['alert_memory_percent']), int(settings['alert_temperature_celsius'])
    out = [
        dict(alert='GPUXidError', for_min=1, dcgm=True, keep=BY_GPU, labels={'severity': 'warning'},
             fire={'DCGM_FI_DEV_XID_ERRORS': '13x30'}, silent={'DCGM_FI_DEV_XID_ERRORS': '0x30'},
             summary='GPU 0 on gpu-node-1 reported XID 13',
             description='The NVIDIA driver reported XID error 13 on GPU 0 (%s) of node gpu-node-1. Look the code up '
                         'in the NVIDIA XID catalogue; a GPU that keeps reporting errors should be drained.' % GPU['UUID']),
        dict(alert='GPUXidErrorCritical', for_min=0, dcgm=True, keep=BY_GPU, labels={'severity': 'critical'},
             fire={'DCGM_FI_DEV_XID_ERRORS': '79x30'}, silent={'DCGM_FI_DEV_XID_ERRORS': '13x30'},
             summary='GPU 0 on gpu-node-1 reported critical XID 79',
             description='XID 79 on GPU 0 (%s) of node gpu-node-1 usually means the GPU needs a reset or '
                         'replacement: cordon and drain the node.' % GPU['UUID']),
        dict(alert='GPUUnavailable', for_min=15, dcgm=False, keep=None, labels={'severity': 'warning'},
             fire={'kube_node_status_capacity': '8x30', 'kube_node_status_allocatable': '6x30'},
             silent={'kube_node_status_capacity': '8x30', 'kube_node_status_allocatable': '8x30'},
             summary='2 nvidia_com_gpu devices unavailable on gpu-node-1',
             description='Node gpu-node-1 has 2 nvidia_com_gpu devices in its capacity that are not allocatable '
                         '(unhealthy GPU, device plugin not running or a MIG change that did not end).'),
        dict(alert='GPUMIGConfigFailed', for_min=1, dcgm=False, keep=('node',), labels={'severity': 'warning'},
             fire={MIG_STATE % 'failed': '1x30'}, silent={MIG_STATE % 'success': '1x30'},
             summary='MIG reconfiguration failed on gpu-node-1',
             description='The MIG manager set nvidia.com/mig.config.state=failed on gpu-node-1. Its GPUs are not in '
                         'the requested layout; check the mig-manager logs, fix the config and change the label again.'),
        # silent: pending for 15 minutes, then success
        dict(alert='GPUMIGConfigStuck', for_min=20, dcgm=False, keep=('node',), labels={'severity': 'warning'},
             fire={MIG_STATE % 'pending': '1x30'},
             silent={MIG_STATE % 'pending': '1x15 stale', MIG_STATE % 'success': '_x16 1x14'},
             summary='MIG reconfiguration pending for 20 minutes on gpu-node-1',
             description='nvidia.com/mig.config.state is still pending on gpu-node-1 (see gpu-operator#2833: the MIG '
                         'manager can wedge with the GPU operands paused-for-mig-change and no GPU advertised).'),
        # fires above the threshold, silent at it
        dict(alert='GPUMemoryAlmostFull', for_min=15, dcgm=True, keep=None, labels={'severity': 'info'},
             fire=_fb(mem + 2.5), silent=_fb(mem), series_labels=MIG,
             summary='GPU 0 on gpu-node-1 framebuffer %g%% used' % (mem + 2.5),
             description='GPU 0 3g.40gb of node gpu-node-1 (pod ml/trainer-0) has used most of its memory for 15 '
                         'minutes; the next allocation may fail with out-of-memory.'),
        dict(alert='GPUTemperatureHigh', for_min=10, dcgm=True, keep=None, labels={'severity': 'warning'},
             fire={'DCGM_FI_DEV_GPU_TEMP': '%dx30' % (temp + 3)}, silent={'DCGM_FI_DEV_GPU_TEMP': '%dx30' % temp},
             summary='GPU 0 on gpu-node-1 at %d C' % (temp + 3),
             description='GPU 0 of node gpu-node-1 has been hot for 10 minutes (check cooling).'),
        dict(alert='GPUMetricsDown', for_min=10, dcgm=False, keep=None, labels={'severity': 'warning'},
             fire={'up': '0x30'}, silent={'up': '1x30'}, series_labels=EXPORTER,
             summary='DCGM exporter on 10.128.2.15:9400 is down',
             description='Prometheus cannot scrape the DCGM exporter 10.128.2.15:9400; GPU metrics and the GPU alerts '
                         'above are blind for that node.'),
    ]
    if settings['alert_vgpu_license']:
        out.append(dict(
            alert='GPUVGPUUnlicensed', for_min=10, dcgm=True, keep=BY_GPU, labels={'severity': 'warning'},
            fire={'DCGM_FI_DEV_VGPU_LICENSE_STATUS': '0x30'}, silent={'DCGM_FI_DEV_VGPU_LICENSE_STATUS': '1x30'},
            summary='vGPU 0 on gpu-node-1 is not licensed',
            description='The vGPU 0 (%s) of node gpu-node-1 reports no license for 10 minutes; an unlicensed vGPU '
                        'runs with reduced capability. Check the licensing Secret (gridd.conf, client configuration '
                        'token) and that the node reaches the NVIDIA license service.' % GPU['UUID']))
    return out


def series_labels(case):
    """The labels of the case's input series (without the node label of DCGM series)."""
    if 'series_labels' in case:
        return case['series_labels']
    if case['dcgm']:
        return GPU
    return GPU_RES if case['alert'] == 'GPUUnavailable' else KSM
