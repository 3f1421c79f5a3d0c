"""The failure collector of the Python tests: every check runs and a failed one is printed at
once, so one run reports every mismatch; finish() prints the closing line `N passed, N failed`
and exits 1 if any check failed.

Tests that pass a collector around make a Checker; the others use the module's own through
check(), failed() and finish()."""
import sys


def as_float64(x):
    """x (number, list, numpy array or torch tensor) as a float64 numpy array (numpy imported
    here, so that tests without numpy, such as those of the PyPI environment, can use the rest)."""
    import numpy as np
    if hasattr(x, "detach"):  # a torch tensor: no torch import needed here
        x = x.detach().double().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


class Checker:
    """Counts passed checks and collects failed ones under a test name."""

    def __init__(self, name):
        self.name, self.failures, self.passed = name, [], 0

    def fail(self, msg):
        """Records one failure and prints it."""
        self.failures.append(msg)
        print("FAIL:", msg, flush=True)

    def ok(self, cond, msg):
        """Records a pass, or a failure with msg unless cond holds; returns cond."""
        if cond:
            self.passed += 1
        else:
            self.fail(msg)
        return cond

    def close(self, what, got, want, atol, rtol=0.0):
        """Element-wise |got - want| <= atol + rtol*|want| over finite values of the same shape
        (a NaN in want fails too); a failure names the worst element. Returns whether it held."""
        import numpy as np
        got, want = as_float64(got), as_float64(want)
        if got.shape != want.shape:
            return self.ok(False, f"{what}: shape {list(got.shape)} != expected {list(want.shape)}")
        if not np.isfinite(got).all():
            return self.ok(False, f"{what}: non-finite values")
        if np.isnan(want).any():  # a NaN would pass every comparison below unseen
            return self.ok(False, f"{what}: the reference holds NaN")
        excess = np.abs(got - want) - (atol + rtol * np.abs(want))
        if excess.size and excess.max() > 0:
            i = int(excess.argmax())
            g, w = got.flat[i].item(), want.flat[i].item()
            bad = int((excess > 0).sum())
            return self.ok(False, f"{what}: {bad}/{excess.size} elements off; worst flat index {i}: "
                                  f"got {g:.9g}, want {w:.9g} (atol {atol:g}, rtol {rtol:g})")
        return self.ok(True, what)

    def finish(self):
        """Prints the closing line and exits: 0 when every check passed, else 1."""
        print(f"{self.name}: {self.passed} passed, {len(self.failures)} failed")
        sys.exit(1 if self.failures else 0)


_default = Checker("")


def check(ok, what):
    """Records one check of the module's collector; returns ok."""
    return _default.ok(ok, what)


def failed():
    """True once any check of the module's collector has failed."""
    return bool(_default.failures)


def finish(name):
    """Closes the module's collector under the test's name (see Checker.finish)."""
    _default.name = name
    _default.finish()
