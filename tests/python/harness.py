"""What the Python test scripts share: run every test_* function of a module,
each reported on its own line, and exit non-zero naming the ones that failed."""

import shutil
import sys
import time
import traceback


def run_tests(namespace, only, base, keep, started):
    """Runs the callables named test_* in `namespace` whose name contains `only`,
    then removes `base` unless `keep`; exits with the failures' names."""
    tests = [(name, f) for name, f in namespace.items() if name.startswith("test_") and callable(f)
             and only in name]
    failures = []
    for name, test in tests:
        try:
            test()
            print("ok    %s" % name)
        except Exception as error:
            failures.append(name)
            print("FAIL  %s: %s" % (name, error))
            if not isinstance(error, AssertionError):
                traceback.print_exc()
        sys.stdout.flush()
    if not keep:
        shutil.rmtree(base, ignore_errors=True)
    if failures:
        sys.exit("%d of %d tests failed: %s" % (len(failures), len(tests), ", ".join(failures)))
    print("all %d tests passed in %.1f s" % (len(tests), time.time() - started))
