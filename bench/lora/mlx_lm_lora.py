#!/usr/bin/env python3
"""`mlx_lm.lora` itself, with a training callback that prints each progress report as one
JSON line (`REPORT {...}`): the iteration, train loss, tokens/s, iterations/s and peak memory
its trainer hands to callbacks (`TrainingCallback.on_train_loss_report`), which its own
progress line (0.32.2) does not show all of.

    python bench/lora/mlx_lm_lora.py <mlx_lm.lora's arguments>

Nothing else changes: the arguments, the config file and the run are `mlx_lm.lora.main`'s.
"""
import json
import sys

import mlx_lm
import mlx_lm.lora as lora
from mlx_lm.tuner.callbacks import TrainingCallback

assert mlx_lm.__version__ == "0.32.2", f"expected mlx_lm 0.32.2, found {mlx_lm.__version__}"


class Reports(TrainingCallback):
    def on_train_loss_report(self, info):
        print("REPORT " + json.dumps(info), flush=True)

    def on_val_loss_report(self, info):
        print("VAL " + json.dumps(info), flush=True)


# `run` builds its callback from --report-to (None without it): ours instead.
lora.get_reporting_callbacks = lambda *args, **kwargs: Reports()

if __name__ == "__main__":
    sys.argv[0] = "mlx_lm.lora"
    lora.main()
