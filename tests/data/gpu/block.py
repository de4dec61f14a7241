"""A pre-norm transformer block in bfloat16, one annotated training step on a CUDA GPU: what `rl profile --ncu`
profiled into block_train.ncu-rep (README.md beside this file). `model()` is also what
`rl estimate block:model --dtype bfloat16` traces.

Shapes are multiples of 128 so that the GEMMs' tiles need no padding: tokens M = BATCH * SEQ = 4096, width 512,
8 heads of 64; attention through F.scaled_dot_product_attention (whichever fused kernel PyTorch picks).
"""

import torch
import torch.nn.functional as F
from torch import nn

from rooflake.instrument import annotate

BATCH, SEQ, WIDTH, HEADS = 8, 512, 512, 8


class Attention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, width: int = WIDTH, heads: int = HEADS) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.ln2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


def model() -> Block:
    return Block()


if __name__ == "__main__":
    torch.manual_seed(0)
    net = model().cuda().to(torch.bfloat16)
    x = torch.randn(BATCH, SEQ, WIDTH, device="cuda", dtype=torch.bfloat16)
    with annotate(net, domain="block"):
        net(x).sum().backward()
    torch.cuda.synchronize()
