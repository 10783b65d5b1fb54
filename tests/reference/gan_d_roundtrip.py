#!/usr/bin/python3
"""gan_d_roundtrip.py — torch's side of test_gan_step's state_dict check (ctest
test_gan_step.torch): DIR/net_d.safetensors, PixFlow's net_d (pf_gan_d_serialize), must load
into UNetDiscriminatorSN(3, num_feat, skip_connection) — written from BasicSR's description with
torch.nn.utils.spectral_norm in tests/reference/gan_step_ref.py — or, when its metadata says
network_d VGGStyleDiscriminator, into VGGStyleDiscriminator(3, num_feat, input_size) (the same
file; BatchNorm2d's running statistics and int64 num_batches_tracked included) with
load_state_dict(strict=True), its tensors in the order of torch's own state_dict(); then one
training-mode forward (the spectral norm iterates u; BatchNorm updates its running statistics)
on DIR/x.f32 (N x 3 x H x W float32), and
torch's state_dict after it goes to DIR/torch_d.safetensors and the output to DIR/out.f32, for
PixFlow to load and compare.
usage: gan_d_roundtrip.py DIR"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gan_step_ref as R  # noqa: E402
import st_io  # noqa: E402


def main():
    d = sys.argv[1]
    tensors, meta = st_io.read(os.path.join(d, 'net_d.safetensors'))
    vgg = meta.get('network_d') == 'VGGStyleDiscriminator'
    if vgg:
        net = R.VGGStyleDiscriminator(3, int(meta['num_feat']), int(meta['input_size']))
    else:
        net = R.UNetDiscriminatorSN(3, int(meta['num_feat']), meta['skip_connection'] == '1')
    keys = list(net.state_dict().keys())
    if list(tensors.keys()) != keys:
        sys.exit('order: PixFlow %s, torch %s' % (list(tensors.keys()), keys))
    net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in tensors.items()}, strict=True)
    x = np.fromfile(os.path.join(d, 'x.f32'), dtype=np.float32)
    size = int(meta['input_size']) if vgg else 32
    n, h, w = (int(meta[k]) for k in ('n', 'h', 'w')) if 'n' in meta else (2, size, size)
    out = net.train()(torch.from_numpy(x).view(n, 3, h, w))
    out.detach().numpy().astype(np.float32).tofile(os.path.join(d, 'out.f32'))
    st_io.write(os.path.join(d, 'torch_d.safetensors'), net.state_dict().items(),
                {'source': 'tests/reference/gan_d_roundtrip.py'})
    print('gan_d_roundtrip: %d tensors loaded strictly in torch\'s order; one training forward'
          % len(keys))


if __name__ == '__main__':
    main()
