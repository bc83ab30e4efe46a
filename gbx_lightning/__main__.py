"""``python -m gbx_lightning fit|validate|test --config configs/a2c.yaml [--ckpt_path last]``."""

import sys

from gbx_lightning.cli import main

if __name__ == "__main__":
    sys.exit(main())
