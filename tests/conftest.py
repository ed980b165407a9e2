import pytest


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run pytest -m gpu on the device)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fresh_fusion_cache():
    """Each test compiles for itself: a fusion another test compiled is not reused (a test
    that patches the compiler must see its patch take effect)."""
    from engine import fusion_cache

    fusion_cache.clear()
    yield
