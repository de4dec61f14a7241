"""Model side: analytic FLOPs and compulsory bytes per op on meta tensors (issue 12's checks), DeLTA-style traffic."""

from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch", reason="the model side needs torch: pip install 'rooflake[torch]'")

from torch import nn  # noqa: E402
from torch_models import SmallLSTM, resnet50  # noqa: E402

from rooflake.instrument.estimate import (  # noqa: E402
    TORCH_SOURCE,
    conv_flops,
    estimate,
    estimate_rows,
    per_module,
)
from rooflake.instrument.traffic import GpuSpec, attention_traffic, conv_traffic, gemm_shape  # noqa: E402
from rooflake.schema import ESTIMATES, UsageError  # noqa: E402


@pytest.fixture(scope="module")
def resnet_b1() -> list[dict]:
    return estimate_rows(resnet50(), torch.empty(1, 3, 224, 224))


def test_resnet50_conv1_flops_and_compulsory_bytes(resnet_b1: list[dict]) -> None:
    (conv1,) = [r for r in resnet_b1 if r["module_path"] == "conv1"]
    assert conv1["op"] == "aten.convolution" and conv1["flops_source"] == TORCH_SOURCE
    assert conv1["flops"] == 236_027_904 == conv_flops(1, 64, 112, 112, 3, 7, 7)
    # input 3x224x224 + weight 64x3x7x7 + output 64x112x112, FP32
    assert conv1["bytes_compulsory"] == 3_851_008
    assert conv1["input_shapes"] == ["1x3x224x224", "64x3x7x7"] and conv1["output_shapes"] == ["1x64x112x112"]


def test_every_conv_matches_the_textbook_formula(resnet_b1: list[dict]) -> None:
    convs = [r for r in resnet_b1 if r["op"] == "aten.convolution"]
    assert len(convs) == 53  # 1 stem + 16 blocks x 3 + 4 downsamples
    for r in convs:
        n, c, _h, _w = map(int, r["input_shapes"][0].split("x"))
        k, cg, kr, ks = map(int, r["input_shapes"][1].split("x"))
        _, _, p, q = map(int, r["output_shapes"][0].split("x"))
        assert r["flops"] == conv_flops(n, k, p, q, cg, kr, ks), r["module_path"]


def test_resnet50_forward_total(resnet_b1: list[dict]) -> None:
    """8.18 GFLOP per image (4.09 GMAC, the figure usually quoted for ResNet-50), convolutions + fc."""
    gemm = sum(r["flops"] for r in resnet_b1 if r["flops_source"] == TORCH_SOURCE)
    assert gemm == pytest.approx(8.178e9, rel=1e-3)
    assert {r["phase"] for r in resnet_b1} == {"forward"}


def test_linear_is_2_b_in_out() -> None:
    rows = estimate_rows(nn.Linear(512, 256, bias=False), torch.empty(32, 512))
    (mm,) = [r for r in rows if r["flops"]]
    assert mm["flops"] == 2 * 32 * 512 * 256
    assert mm["bytes_compulsory"] == (32 * 512 + 512 * 256 + 32 * 256) * 4


def test_lstm_is_8_b_h_i_plus_h_t() -> None:
    b, t, i, h = 4, 10, 32, 64
    rows = estimate_rows(nn.LSTM(i, h, batch_first=True), torch.empty(b, t, i))
    gemm = sum(r["flops"] for r in rows if r["flops_source"] == TORCH_SOURCE)
    # two addmm per step (x W_ih, h W_hh): 2 B (I + H) 4H each step; the bias adds are counted by torch as well
    assert gemm == pytest.approx(8 * b * h * (i + h) * t, rel=0.01)


def test_attention_is_4_b_h_n2_d_with_flash_attention_traffic() -> None:
    class Attention(nn.Module):
        def forward(self, q, k, v):  # type: ignore[no-untyped-def]
            return nn.functional.scaled_dot_product_attention(q, k, v)

    x = torch.empty(1, 8, 4096, 64, dtype=torch.float16)
    rtx4060ti = GpuSpec("NVIDIA GeForce RTX 4060 Ti", sm_count=34, l2_bytes=32 * 2**20)
    (row,) = estimate_rows(Attention(), (x, x, x), gpu=rtx4060ti)
    # the real FlashAttention reports in ../shared/fixtures/ncu count exactly this many tensor ops
    assert row["flops"] == 4 * 1 * 8 * 4096**2 * 64 == 34_359_738_368
    assert row["traffic_model"] == "flash-attention"
    assert row["bytes_compulsory"] == 4 * 8 * 4096 * 64 * 2
    assert row["bytes_dram"] == row["bytes_compulsory"]  # K and V of a head (1 MiB) stay in the 32 MiB L2
    assert row["bytes_l2"] == 8 * (2 * 4096 * 64 * 2 + 64 * 2 * 4096 * 64 * 2)


def test_attention_by_keyword_in_3d_and_inside_multihead_attention() -> None:
    """F.scaled_dot_product_attention(query=..., key=..., value=...) and 3-D inputs ended in a ValueError blamed
    on the model; nn.MultiheadAttention (need_weights=False: it calls the same function) was two bmm and a softmax,
    their traffic unfused (74x the DRAM at N = 4096)."""
    F = nn.functional

    class ByName(nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            return F.scaled_dot_product_attention(query=x, key=x, value=x)

    class Plain(nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            return F.scaled_dot_product_attention(x, x, x)

    (row,) = estimate_rows(ByName(), torch.empty(2, 4, 16, 8))
    assert row["flops"] == 4 * 2 * 4 * 16**2 * 8
    (row,) = estimate_rows(Plain(), torch.empty(6, 16, 8))  # (N, L, E): 6 batches of one head
    assert row["flops"] == 4 * 6 * 16**2 * 8 and row["op"] == "aten.scaled_dot_product_attention"

    class Stock(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mha = nn.MultiheadAttention(64, 4, batch_first=True)

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.mha(x, x, x, need_weights=False)[0]

    rows = estimate_rows(Stock(), torch.empty(2, 128, 64))
    (att,) = [r for r in rows if r["op"] == "aten.scaled_dot_product_attention"]
    assert att["flops"] == 4 * 2 * 4 * 128**2 * 16 and att["module_path"] == "mha"
    assert not [r for r in rows if r["op"] == "aten._softmax"]  # (its one bmm is the q/k/v in-projection)
    assert [r["flops"] for r in rows if r["op"] == "aten.bmm"] == [2 * 128 * 2 * 64 * 192]
    assert F.scaled_dot_product_attention is torch._C._nn.scaled_dot_product_attention  # given back


def test_attention_backward_is_one_fused_op_of_2_5_times_the_forward() -> None:
    """With training, the attention's backward was its math decomposition's (two bmm per gradient and a softmax
    backward: 2x the forward, the T x T scores in its bytes); a fused kernel's backward recomputes the scores, and
    cuDNN's on an H100 counted 2.5x (tests/test_gpu_h100.py). Now one fused op, torch's sdpa_backward_flop_count,
    with gradients still reaching the projections."""

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(32, 96)

        def forward(self, x):  # type: ignore[no-untyped-def]
            q, k, v = self.qkv(x).view(2, 64, 3, 4, 8).permute(2, 0, 3, 1, 4)
            return nn.functional.scaled_dot_product_attention(q, k, v)

    rows = estimate_rows(Block(), torch.empty(2, 64, 32), training=True)
    backward = [r for r in rows if r["phase"] == "backward" and r["module_path"] == ""]
    (fused,) = [r for r in backward if r["op"] == "aten.scaled_dot_product_attention_backward"]
    forward = 4 * 2 * 4 * 64**2 * 8
    assert fused["flops"] == 2.5 * forward and fused["flops_source"] == TORCH_SOURCE
    assert (
        fused["bytes_compulsory"] == 8 * 2 * 4 * 64 * 8 * 4
    )  # Q, K, V, O, dO read; dQ, dK, dV written (fp32)
    assert not [r for r in backward if r["op"] in ("aten.bmm", "aten._softmax_backward_data")]
    qkv = [
        r["flops"]
        for r in rows
        if r["phase"] == "backward" and r["module_path"] == "qkv" and r["op"] == "aten.mm"
    ]
    assert qkv == [2 * 128 * 96 * 32]  # the weight gradient (the input needs none)
    assert nn.functional.scaled_dot_product_attention is torch._C._nn.scaled_dot_product_attention


def test_training_is_three_times_forward_for_conv_and_linear() -> None:
    rows = estimate_rows(resnet50(), torch.empty(2, 3, 224, 224), training=True)
    sums = per_module([r for r in rows if r["flops_source"] == TORCH_SOURCE])
    for path in ("layer1.0.conv1", "layer3.2.conv2", "fc"):
        fwd, bwd = sums[(path, "forward")], sums[(path, "backward")]
        assert (fwd + bwd) / fwd == pytest.approx(3.0, rel=1e-3), path
    # the stem's input needs no gradient: weight gradient only
    assert sums[("conv1", "backward")] == sums[("conv1", "forward")]


def test_model_is_untouched_and_table_has_the_schema() -> None:
    model = SmallLSTM()
    before = {n: p.clone() for n, p in model.state_dict().items()}
    table = estimate(model, torch.randn(2, 5, 32), run_id="r1", training=True)
    assert table.schema.equals(ESTIMATES, check_metadata=False)
    assert set(table.column("run_id").to_pylist()) == {"r1"}
    assert all(p.grad is None for p in model.parameters())
    for n, p in model.state_dict().items():
        assert torch.equal(p, before[n]) and p.device.type == "cpu"


def test_ops_without_a_formula_say_so() -> None:
    rows = estimate_rows(
        nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Hardswish()), torch.empty(1, 3, 8, 8)
    )
    hard = [r for r in rows if r["op"] == "aten.hardswish"]
    assert hard and hard[0]["flops"] is None and hard[0]["flops_source"].startswith("none: ")
    relu = [r for r in rows if r["op"] == "aten.relu"][0]
    assert relu["flops"] == 4 * 6 * 6 and relu["flops_source"].startswith("rooflake:")


def test_a_model_that_cannot_run_on_meta_is_one_usage_error() -> None:
    class Bad(nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            return x.item() + 1  # data-dependent: no meta kernel

    with pytest.raises(UsageError, match="meta tensors"):
        estimate_rows(Bad(), torch.empty(1))


def test_transformers_model_from_config_runs_on_meta() -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(
        num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512
    )
    with torch.device("meta"):
        model = transformers.AutoModel.from_config(cfg)
    ids = torch.zeros(4, 64, dtype=torch.long)
    rows = estimate_rows(model, ids)
    paths = {r["module_path"] for r in rows}
    assert "encoder.layer.0.attention.self.query" in paths
    # each of Q, K, V, O projections per layer: 2 B T H H
    q = [r for r in rows if r["module_path"] == "encoder.layer.0.attention.self.query" and r["flops"]]
    assert sum(r["flops"] for r in q if r["flops_source"] == TORCH_SOURCE) == 2 * 4 * 64 * 128 * 128


def test_conv_traffic_bounds() -> None:
    """Modelled traffic never drops below the compulsory bytes; L1 ≥ L2 ≥ DRAM for a conv with halo reuse."""
    from rooflake.instrument.traffic import ConvShape

    a100 = GpuSpec("A100", sm_count=108, l2_bytes=40 * 2**20)
    t = conv_traffic(ConvShape(n=64, c=256, k=256, h=56, w=56, r=3, s=3, pad=1), 2, a100)
    assert t.l1 >= t.l2 >= t.dram >= t.compulsory
    g = conv_traffic(gemm_shape(4096, 4096, 4096), 2, a100)
    assert g.model == "delta-gemm" and g.l1 == g.l2 and g.dram is not None and g.dram >= g.compulsory
    small = attention_traffic(1, 1, 128, 128, 64, 2, None)
    assert small.dram is None and small.compulsory == 4 * 128 * 64 * 2


def test_rl_estimate_stores_a_torch_model_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import duckdb
    from typer.testing import CliRunner

    from rooflake.cli import app

    store = tmp_path / "store"
    args = ["estimate", "torch_models:resnet50", "--input", "1x3x224x224", "--gpu", "A100 SXM4 40GB"]
    args += ["-l", "model=resnet50", "--store", str(store)]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert first.output.startswith("ingested ") and "8.238 GFLOP (modelled)" in first.output
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and again.output.startswith("exists ")
    con = duckdb.connect()
    runs = con.sql(f"SELECT source_format, gpu_name, labels FROM '{store}/runs/*/*.parquet'").fetchall()
    assert runs == [("torch-model", "A100 SXM4 40GB", {"model": "resnet50"})]
    conv1 = con.sql(
        f"SELECT flops, bytes_compulsory, bytes_dram FROM '{store}/estimates/*/*.parquet' WHERE module_path = 'conv1'"
    ).fetchall()
    assert conv1 == [(236_027_904.0, 3_851_008, 3_851_008.0)]  # fits the A100's L2: DRAM = compulsory


def test_rl_estimate_bad_input_is_one_error_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from rooflake.cli import app

    for args, msg, code in [
        (["estimate", "no_such_module:f", "--input", "1x3"], "cannot import", 1),
        # a bad value of an option: exit 2, as click's own checks (it was 1)
        (["estimate", "torch_models:resnet50", "--input", "1x3x224x224:float99"], "unknown dtype", 2),
        (["estimate", "torch_models:resnet50", "--input", "1x3xZ"], "expected a shape like", 2),
        (
            ["estimate", "torch_models:resnet50", "--input", "1x3x8x8", "--dtype", "foo"],
            "not a floating-point torch dtype",
            2,
        ),
        # an integer dtype, a spec without ':', an unknown or ambiguous GPU: exit 2 (they were 1)
        (
            ["estimate", "torch_models:resnet50", "--input", "1x3x8x8", "--dtype", "int8"],
            "not a floating-point",
            2,
        ),
        (["estimate", "torch_models.resnet50", "--input", "1x3x8x8"], "expected PACKAGE.MODULE:FACTORY", 2),
        (
            ["estimate", "torch_models:resnet50", "--input", "1x3x224x224", "--gpu", "Z9000"],
            "matches 0 GPUs",
            2,
        ),
        (
            ["estimate", "torch_models:resnet50", "--input", "1x3x224x224", "--gpu", "H100"],
            "GPUs of the datasheet",
            2,
        ),
    ]:
        res = CliRunner().invoke(app, [*args, "--store", str(tmp_path / "s")])
        assert res.exit_code == code, res.output
        lines = [line for line in res.output.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("Error: ") and msg in lines[0], res.output
    assert not (tmp_path / "s").exists()


def test_lstm_gate_split_is_a_view_and_no_op_of_it_lacks_flops() -> None:
    rows = estimate_rows(SmallLSTM(), torch.empty(4, 10, 32), training=True)
    assert [r["op"] for r in rows if r["flops"] is None] == []
    splits = [r for r in rows if r["op"] == "aten.unsafe_split"]
    assert (
        len(splits) == 10
    )  # nn.LSTM splits its gates once per time step, as a view: no arithmetic, no bytes
    assert {(r["flops"], r["flops_source"], r["bytes_compulsory"]) for r in splits} == {
        (0.0, "rooflake:view", 0)
    }
    (sel,) = [
        r for r in rows if r["op"] == "aten.select_backward"
    ]  # out[:, -1]'s gradient, copied into zeros
    assert (sel["flops"], sel["flops_source"]) == (0.0, "rooflake:data-movement") and sel[
        "bytes_compulsory"
    ] > 0


def test_integer_ops_are_zero_flops() -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    rows = estimate_rows(
        model, torch.empty(2, 3, 8, 8), training=True
    )  # (in eval mode BatchNorm counts nothing)
    (count,) = [
        r for r in rows if r["module_path"] == "1" and r["op"] == "aten.add_"
    ]  # num_batches_tracked += 1
    assert (count["dtype"], count["flops"], count["flops_source"]) == ("int64", 0.0, "rooflake:integer")


def test_bert_training_rules_softmax_and_embedding_backward() -> None:
    transformers = pytest.importorskip("transformers")
    b, t, h, heads = 2, 16, 64, 2
    cfg = transformers.BertConfig(
        num_hidden_layers=1, hidden_size=h, num_attention_heads=heads, intermediate_size=128,
        attn_implementation="eager", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    with torch.device("meta"):
        model = transformers.AutoModel.from_config(cfg)
    rows = estimate_rows(model, torch.zeros(b, t, dtype=torch.long), training=True)
    assert [r["op"] for r in rows if r["flops"] is None] == []
    (soft,) = [r for r in rows if r["op"] == "aten._softmax_backward_data"]
    assert soft["flops"] == 4 * b * heads * t * t and soft["flops_source"] == "rooflake:softmax backward x4"
    emb = {r["module_path"]: r for r in rows if r["op"] == "aten.embedding_dense_backward"}
    # each row of the output gradient added into the weight row it came from: B·T·H adds per embedding
    assert emb["embeddings.word_embeddings"]["flops"] == b * t * h
    assert emb["embeddings.word_embeddings"]["flops_source"] == "rooflake:scatter-add x1"


def test_gru_in_place_transpose_is_a_view_and_nearest_upsampling_a_copy() -> None:
    gru = estimate_rows(nn.GRU(8, 16, batch_first=True), torch.empty(2, 5, 8), training=True)
    assert [r["op"] for r in gru if r["flops"] is None] == []
    (tr,) = [
        r for r in gru if r["op"] == "aten.transpose_"
    ]  # strides changed in place: no arithmetic, no bytes
    assert (tr["flops"], tr["flops_source"], tr["bytes_compulsory"]) == (0.0, "rooflake:view", 0)
    (up,) = [
        r
        for r in estimate_rows(nn.Upsample(scale_factor=2), torch.empty(1, 2, 4, 4))
        if r["op"].startswith("aten.up")
    ]
    assert (up["flops"], up["flops_source"]) == (0.0, "rooflake:data-movement")
    assert up["bytes_compulsory"] == (2 * 4 * 4 + 2 * 8 * 8) * 4


def test_inference_is_traced_in_eval_mode_and_each_modules_mode_restored() -> None:
    """An estimate without --training ran the model in the mode it was built in (train): Dropout's bernoulli_/div_
    and BatchNorm's batch statistics with its num_batches_tracked add_ (53 rows of ResNet-50's inference)."""
    model = nn.Sequential(nn.Linear(16, 16), nn.BatchNorm1d(16), nn.Dropout(0.5), nn.Linear(16, 4))
    model[0].eval()  # a mode of its own: given back as it was
    inference = {r["op"] for r in estimate_rows(model, torch.empty(8, 16))}
    assert not inference & {"aten.bernoulli_", "aten.add_", "aten.div_"}, inference
    assert [m.training for m in model.modules()] == [True, False, True, True, True]
    training = {r["op"] for r in estimate_rows(model, torch.empty(8, 16), training=True)}
    assert "aten.bernoulli_" in training  # dropout runs when training
    assert [m.training for m in model.modules()] == [True, False, True, True, True]


def test_rl_estimate_of_a_changed_model_says_so(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The run id names the spec (factory, inputs, options), not the code: re-estimating a model edited since
    printed `exists` with the new numbers while the store kept the old rows. It is one error line naming --force;
    the same rows again are `exists`."""
    from typer.testing import CliRunner

    from rooflake.cli import app

    monkeypatch.syspath_prepend(str(tmp_path))
    store = str(tmp_path / "store")
    args = ["estimate", "net_v:model", "--input", "8x64", "--store", store]

    def run(layers: str, *more: str) -> object:
        (tmp_path / "net_v.py").write_text(
            f"import torch.nn as nn\ndef model():\n    return nn.Sequential({layers})\n"
        )
        sys.modules.pop("net_v", None)
        return CliRunner().invoke(app, [*args, *more])

    assert run("nn.Linear(64, 64)").output.startswith("ingested ")
    assert run("nn.Linear(64, 64)").output.startswith("exists ")
    changed = run("nn.Linear(64, 64), nn.ReLU()")
    assert changed.exit_code == 1 and changed.stdout == ""
    assert (
        changed.stderr.startswith("Error: torch-model:net_v:model ") and "(2 stored, 3 now" in changed.stderr
    )
    assert "--force replaces it" in changed.stderr
    replaced = run("nn.Linear(64, 64), nn.ReLU()", "--force")
    assert replaced.output.startswith("replaced ") and " 3 ops " in replaced.output


def test_traffic_shapes_follow_the_op() -> None:
    """Modelled DRAM fell below the compulsory bytes (docs/model.md: never): a convolution's P, Q took the first
    axis' stride and padding for both and no dilation, a transposed convolution was modelled as a forward one with
    its channels swapped, bmm shared one B over its batch; and a GEMV (M = 1) was 1.69x its compulsory bytes: a
    128-row A panel for one row, 108 B panels a wave where 64 exist."""
    from rooflake.instrument.traffic import ConvShape

    a100 = GpuSpec("A100", sm_count=108, l2_bytes=40 * 2**20)
    shape = ConvShape(n=2, c=16, k=32, h=32, w=32, r=3, s=5, stride=1, pad=1, stride_w=2, pad_w=2)
    assert (shape.p, shape.q) == (32, 16)
    assert ConvShape(n=1, c=1, k=1, h=32, w=32, r=3, s=3, pad=2, dilation=2).p == 32

    def rows(m: nn.Module, *x: torch.Tensor, dtype: torch.dtype | None = None) -> list[dict]:
        return [r for r in estimate_rows(m, x, gpu=a100, dtype=dtype) if r["traffic_model"] or r["flops"]]

    for m, x in (
        (nn.Conv2d(16, 32, (3, 5), stride=(1, 2), padding=(1, 2)), torch.empty(2, 16, 32, 32)),
        (nn.Conv2d(16, 32, 3, dilation=2, padding=2), torch.empty(2, 16, 32, 32)),
    ):
        (r,) = rows(m, x)
        assert r["bytes_dram"] >= r["bytes_compulsory"] and r["bytes_l2"] >= r["bytes_dram"], r
    (r,) = rows(nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1), torch.empty(2, 16, 16, 16))
    assert r["flops"] > 0 and r["traffic_model"] is None and r["bytes_dram"] is None

    class Bmm(nn.Module):
        def forward(self, a, b):  # type: ignore[no-untyped-def]
            return torch.bmm(a, b)

    (r,) = rows(Bmm(), torch.empty(128, 256, 64), torch.empty(128, 64, 256))
    assert (
        r["bytes_dram"] == r["bytes_compulsory"] == 4 * 128 * (2 * 256 * 64 + 256 * 256)
    )  # was 42.0 MB < 50.3
    (r,) = rows(nn.Linear(8192, 8192, bias=False), torch.empty(1, 8192), dtype=torch.float16)
    assert r["bytes_dram"] == r["bytes_compulsory"]  # was 226.5 MB for 134.3 MB
    assert r["bytes_l1"] <= 1.01 * r["bytes_compulsory"]  # was 268 MB
