#!/usr/bin/python3
"""torch_basicvsrpp.py — the PyTorch side of PixFlow's BasicVSR++ video demo (issue 42,
configs/demo_video_pp.yaml): BasicVSR++ x4 trained on the demo clips and evaluated on the
held-out crop exactly as bench/video/torch_basicvsr.py does for BasicVSR (same data, samples,
Charbonnier eps 1e-12, Adam betas (0.9, 0.99), evaluation, output lines and --json); only the
network differs.

    /usr/bin/python3 bench/video/torch_basicvsrpp.py [torch_basicvsr.py's options] [--mag 10]

Network: tests/reference/basicvsrpp_ref.py's BasicVSRPP (the model test_basicvsrpp checks
PixFlow's BasicVSR++ against: BasicSR's parameter names, torchvision's deform_conv2d for the
modulated deformable convolution, 16 deform groups), imported, not copied: --feat is
mid_channels, --blocks num_blocks, --mag max_residue_magnitude. Defaults: the demo variant's
shape (configs/demo_video_pp.yaml): 16 channels, 1 block, 3 frames, batch 2, LQ patch 64.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), 'tests', 'reference'))
import torch_basicvsr  # noqa: E402
from basicvsrpp_ref import BasicVSRPP  # noqa: E402


def add_args(ap):
    ap.add_argument('--mag', type=float, default=10.0, help='max_residue_magnitude')
    ap.set_defaults(feat=16, blocks=1, frames=3)


if __name__ == '__main__':
    torch_basicvsr.main(lambda a: BasicVSRPP(a.feat, a.blocks, a.mag), 'BasicVSR++', add_args)
