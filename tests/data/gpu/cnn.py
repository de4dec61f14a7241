"""A small CNN, one annotated fp32 training step on a CUDA GPU: what `rl profile --ncu` profiled into
cnn_train.ncu-rep (README.md beside this file). `model()` is also what `rl estimate cnn:model` traces.

fp32 as PyTorch runs it by default: cuDNN may take TF32 Tensor Cores for the convolutions
(torch.backends.cudnn.allow_tf32 is on by default), the Linear layer's GEMM stays plain FP32
(torch.backends.cuda.matmul.allow_tf32 is off by default).
"""

import torch
from torch import nn

from rooflake.instrument import annotate

BATCH, SIDE = 64, 64


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(64, 128, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(128)
        self.conv3 = nn.Conv2d(128, 256, 3, padding=1)
        self.fc = nn.Linear(256 * 8 * 8, 128)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.relu(self.bn1(self.conv1(x))))
        x = self.pool(self.relu(self.bn2(self.conv2(x))))
        x = self.pool(self.relu(self.conv3(x)))
        return self.fc(x.flatten(1))


def model() -> SmallCNN:
    return SmallCNN()


if __name__ == "__main__":
    torch.manual_seed(0)
    net = model().cuda()
    x = torch.randn(BATCH, 3, SIDE, SIDE, device="cuda")
    with annotate(net, domain="cnn"):
        net(x).sum().backward()
    torch.cuda.synchronize()
