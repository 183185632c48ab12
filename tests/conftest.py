import os

import jax
import pytest

# the emjax command turns on JAX's persistent compilation cache; tests that call it in this
# process must not write into the user's cache folder (tests/test_compilation_cache.py runs
# the command in subprocesses with a cache of its own)
os.environ["EMJAX_COMPILATION_CACHE"] = "0"


def pytest_collection_modifyitems(config, items):
    has_gpu = any(d.platform == "gpu" for d in jax.devices())
    skip = pytest.mark.skip(reason="needs a GPU")
    for item in items:
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _session_working_folder(tmp_path_factory):
    """Module- and session-scoped fixtures run in a temporary folder too (the per-test
    folder below is not theirs), so nothing a test writes lands in the checkout."""
    old = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("session-cwd"))
    yield
    os.chdir(old)


@pytest.fixture(autouse=True)
def _own_working_folder(tmp_path_factory, monkeypatch):
    """Each test runs in a fresh empty folder: a command run without --out writes a new
    runNNN_... folder in the current one, never into the checkout."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


class _Terminal:
    """stderr as a terminal that records what is written (progress bars show only there)."""

    def __init__(self):
        import io

        self.buffer = io.StringIO()

    def write(self, s):
        return self.buffer.write(s)

    def flush(self):
        pass

    def isatty(self):
        return True

    def text(self) -> str:
        return self.buffer.getvalue()


@pytest.fixture
def terminal(monkeypatch):
    """Progress bars shown at once (no delay) on a recording terminal instead of stderr."""
    from emjax import progress

    term = _Terminal()
    monkeypatch.setattr(progress, "stream", lambda: term)
    monkeypatch.setattr(progress, "DELAY", 0.0)
    return term
