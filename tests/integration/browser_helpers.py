"""Headless Chromium for the tests of the HTML fleet report: the page the browser built (--dump-dom) and a
screenshot checked to be a real picture, kept at the path an environment variable names (the docs' screenshots
are made that way). Chromium comes from the OS packages (Debian: chromium); tests/runner.py's integration stage
installs it when it runs as root."""

import os
import shutil
import struct
import subprocess
import zlib

import pytest

INSTALL_HINT = ('Chromium is not installed: install the OS package, e.g. as root '
                '"apt-get update && apt-get install -y --no-install-recommends chromium" '
                '(the integration stage of tests/runner.py does this when it runs as root)')
SIZE = (1400, 1800)


def chromium():
    path = shutil.which('chromium') or shutil.which('chromium-browser')
    if not path:
        pytest.fail(INSTALL_HINT)
    return path


def browser(tmp_path, *args):
    """Run headless Chromium with its own profile; its stdout."""
    cmd = [chromium(), '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
           '--user-data-dir=%s' % (tmp_path / 'profile')] + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False,
                          env=dict(os.environ, HOME=str(tmp_path)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def png_facts(data):
    """(width, height, distinct byte values of the decompressed image data) of a PNG."""
    assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
    width, height = struct.unpack('>II', data[16:24])
    chunks, offset = b'', 8
    while offset < len(data):
        length, kind = struct.unpack('>I4s', data[offset:offset + 8])
        if kind == b'IDAT':
            chunks += data[offset + 8:offset + 8 + length]
        offset += 12 + length
    return width, height, len(set(zlib.decompress(chunks)))


def screenshot(tmp_path, page, keep_variable):
    """A screenshot of ``page`` (a pathlib.Path of an HTML file), checked not to be blank; copied to the path the
    environment variable ``keep_variable`` names, when set."""
    shot = tmp_path / 'screenshot.png'
    browser(tmp_path, '--screenshot=%s' % shot, '--window-size=%d,%d' % SIZE, page.as_uri())
    data = shot.read_bytes()
    width, height, distinct = png_facts(data)
    assert (width, height) == SIZE
    assert len(data) > 20000 and distinct > 40, (len(data), distinct)  # not a blank page
    keep = os.environ.get(keep_variable)
    if keep:
        shutil.copyfile(str(shot), keep)
