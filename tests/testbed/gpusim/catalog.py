"""GPU facts: the collection's plugins/module_utils/gpu/catalog.py, loaded BY PATH.

Only the data (products, profile sizes/placements/counts, memory) is taken from it. Placement
decisions are made by gpusim.placement, never by the collection's validator (mig_geometry.py).
"""

import functools
import importlib.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(_HERE, "..", "..", ".."))
DEFAULT_PATH = os.path.join(REPO_ROOT, "plugins", "module_utils", "gpu", "catalog.py")


@functools.lru_cache(maxsize=4)
def load_module(path=None):
    path = path or os.environ.get("GPUSIM_MIG_CATALOG") or DEFAULT_PATH
    spec = importlib.util.spec_from_file_location("gpusim_mig_catalog", path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot load mig_catalog from %s" % path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Catalog(object):
    """Product lookups with optional overrides (simulation.catalog_overrides), cached."""

    def __init__(self, overrides=None, path=None):
        self._mod = load_module(path)
        self._overrides = overrides or None
        self._cache = {}

    def product(self, name):
        """Catalog entry for any spelling of the product, or None when unknown."""
        if not name:
            return None
        if name not in self._cache:
            self._cache[name] = self._mod.get_product(name, self._overrides)
        return self._cache[name]

    def canonical(self, name):
        return self._mod.canonical_product(name)

    def names(self):
        return self._mod.product_names(self._overrides)
