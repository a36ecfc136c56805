"""`python -m bench.worker module:function '{"kwarg": ...}'`: run one measured step in this fresh process and
print its result (plus this process's peak resident memory) as one JSON line for bench.common.run_step."""

from __future__ import annotations

import importlib
import json
import resource
import sys

from bench.common import RESULT_MARKER


def main() -> None:
    target, raw = sys.argv[1], sys.argv[2]
    module_name, function_name = target.split(":")
    function = getattr(importlib.import_module(f"bench.{module_name}"), function_name)
    result = function(**json.loads(raw))
    result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    sys.stdout.flush()
    print(RESULT_MARKER + json.dumps(result, default=str), flush=True)


if __name__ == "__main__":
    main()
