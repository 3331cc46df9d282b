"""pytest set-up for the binding's tests.

  python3 -m pytest python/tests                 # python/portattn of this repository
  python3 -m pytest python/tests --installed     # the portattn `import portattn` finds (an installed wheel)
  python3 -m pytest python/tests -m "not cuda"   # CTest's python_cpu; -m cuda is python_cuda

--skipped-exit-code N makes a run in which every test was skipped exit with N instead of 0, so that
CTest (SKIP_RETURN_CODE 77) reports it as skipped, never as passed.
"""
import os
import sys
import time

import pytest

REPO_PYTHON = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_outcomes = {"passed": 0, "failed": 0, "skipped": 0}


def pytest_addoption(parser):
    parser.addoption("--installed", action="store_true",
                     help="test the installed portattn instead of python/ of this repository")
    parser.addoption("--skipped-exit-code", type=int, default=None,
                     help="exit status when tests ran but all of them were skipped (CTest: 77)")


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA device (CTest's python_cuda runs these)")
    if not config.getoption("--installed"):
        sys.path.insert(0, REPO_PYTHON)


def pytest_runtest_logreport(report):
    if report.skipped:
        _outcomes["skipped"] += 1
    elif report.failed:
        _outcomes["failed"] += 1
    elif report.passed and report.when == "call":
        _outcomes["passed"] += 1


def pytest_sessionfinish(session, exitstatus):
    code = session.config.getoption("--skipped-exit-code")
    if code is not None and exitstatus == 0 and _outcomes["skipped"] and not _outcomes["passed"]:
        session.exitstatus = code


@pytest.fixture(scope="module", autouse=True)
def library():
    """Every test needs the library: skip them all without one (a sanitizer build cannot be
    loaded into a plain Python), fail them all if PORTATTN_LIBRARY names one that does not load."""
    import portattn
    os.environ.pop("PORTATTN_BACKEND", None)  # the tests force backends explicitly
    try:
        portattn.load()
    except portattn.PortattnLoadError as e:
        if os.environ.get("PORTATTN_LIBRARY") and "sanitizer" not in str(e):
            pytest.fail(str(e))
        pytest.skip(str(e))
    print("portattn %s from %s, library %s (version %s)" % (portattn.__version__, portattn.__file__,
                                                            portattn.library_path(), portattn.version()))


@pytest.fixture
def torch_seed():
    """Fresh random inputs for every test that asks, the seed printed so that a failure can be repeated."""
    import torch
    value = int(os.environ.get("PORTATTN_TEST_SEED") or time.time_ns() % (1 << 31))
    print("seed %d (rerun with PORTATTN_TEST_SEED=%d)" % (value, value))
    torch.manual_seed(value)
    return value
