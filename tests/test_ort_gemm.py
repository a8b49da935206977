"""customops.eval.judging.ort_gemm: the model of ORT's saturating u8 x s8 GEMM (x86 without VNNI) against
hand-derived pair sums, against the exact product where no pair can leave int16, against real ORT sessions
where the kernel cannot saturate (so whichever path this CPU takes), and the predicate's reasons. Which
path this machine's ORT takes is never assumed: tools/ort_u8s8_path.py measures that, under emulation."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from customops.eval.judging import ort_gemm
from customops.eval.judging.ort_gemm import (
    ConvGeometry,
    QuantParams,
    exact_matmul_integer,
    explained_by_u8s8_saturation,
    ort_u8s8_matmul_integer,
    qlinear_conv,
    qlinear_matmul,
    requantize,
    saturating_dot,
)
from tests.helpers import one_node_model, run_builtin

EXAMPLE_A = np.array([[255, 255]], np.uint8)
EXAMPLE_B = np.array([[-128], [-128]], np.int8)


def _u8(rng, shape, high=256):
    return rng.integers(0, high, shape).astype(np.uint8)


def _s8(rng, shape, low=-128, high=128):
    return rng.integers(low, high, shape).astype(np.int8)


def _builtin_matmul_integer(a, b, a_zp=None, b_zp=None) -> np.ndarray:
    inputs = {"A": a, "B": b, "a_zp": a_zp, "b_zp": b_zp}
    model, feed = one_node_model("MatMulInteger", inputs, 13, out_type=TensorProto.INT32)
    return run_builtin(model, feed)[0]


def _brute_force(a, b, a_zp, b_zp) -> tuple[np.ndarray, int]:
    """The documented rule, one output and one pair at a time: clamp(a[2j] b[2j] + a[2j+1] b[2j+1]) summed,
    then - b_zp rowsum - a_zp colsum + K a_zp b_zp, modulo 2**32; and the number of clamped pairs."""
    (m, k), n = a.shape, b.shape[1]
    b_zp = np.broadcast_to(np.asarray(b_zp, np.int64).reshape(-1), (n,))
    out, clamped = np.zeros((m, n), np.int64), 0
    for i in range(m):
        for c in range(n):
            total = 0
            for j in range(0, k, 2):
                pair = sum(int(a[i, t]) * int(b[t, c]) for t in (j, j + 1) if t < k)
                clamped += not -32768 <= pair <= 32767
                total += min(max(pair, -32768), 32767)
            zp_terms = -int(b_zp[c]) * int(a[i].astype(np.int64).sum()) - int(a_zp) * int(
                b[:, c].astype(np.int64).sum()
            )
            out[i, c] = total + zp_terms + k * int(a_zp) * int(b_zp[c])
    return ((out + 2**31) % 2**32 - 2**31).astype(np.int32), clamped


def test_the_vectorised_model_is_the_rule_computed_pair_by_pair():
    rng = np.random.default_rng(2)
    for _ in range(40):
        m, k, n = int(rng.integers(1, 5)), int(rng.integers(1, 12)), int(rng.integers(1, 5))
        a, b = _u8(rng, (m, k)), _s8(rng, (k, n))
        a_zp, b_zp = np.uint8(rng.integers(0, 256)), _s8(rng, (n,) if rng.integers(0, 2) else ())
        expected, clamped = _brute_force(a, b, a_zp, b_zp)
        np.testing.assert_array_equal(ort_u8s8_matmul_integer(a, b, a_zp, b_zp), expected)
        operands = ort_gemm.matmul_operands(a, b, a_zp, b_zp)
        assert saturating_dot(operands.a, operands.b)[1] == clamped


def test_the_issue_example_saturates_to_int16_min_where_the_exact_result_is_minus_65280():
    assert ort_u8s8_matmul_integer(EXAMPLE_A, EXAMPLE_B).tolist() == [[-32768]]
    assert ort_u8s8_matmul_integer(EXAMPLE_A, EXAMPLE_B).dtype == np.int32
    assert exact_matmul_integer(EXAMPLE_A, EXAMPLE_B).tolist() == [[-65280]]
    assert ort_u8s8_matmul_integer(EXAMPLE_A, -EXAMPLE_B - 1).tolist() == [[32767]]  # 255*127*2 = 64770


def test_pairs_start_at_k_0_and_an_odd_k_pads_the_last_pair_with_zero():
    # K = 3: pairs (0, 1) and (2, pad); only the first saturates
    a, b = np.array([[255, 255, 255]], np.uint8), np.array([[-128], [-128], [-128]], np.int8)
    assert ort_u8s8_matmul_integer(a, b).tolist() == [[-32768 + 255 * -128]]
    # the two large products sit at positions 1 and 2, which are in different pairs: nothing saturates
    a, b = np.array([[0, 255, 255]], np.uint8), np.array([[0], [-128], [-128]], np.int8)
    assert ort_u8s8_matmul_integer(a, b).tolist() == exact_matmul_integer(a, b).tolist() == [[-65280]]


def test_zero_points_do_not_move_the_saturation_they_are_applied_exactly_after_it():
    # (255 - 255) * anything is 0 exactly, but the kernel multiplies the raw bytes and corrects afterwards
    a_zp, b_zp = np.uint8(255), np.int8(-128)
    assert exact_matmul_integer(EXAMPLE_A, EXAMPLE_B, a_zp, b_zp).tolist() == [[0]]
    assert ort_u8s8_matmul_integer(EXAMPLE_A, EXAMPLE_B, a_zp, b_zp).tolist() == [[-32768 + 65280]]


@pytest.mark.parametrize("seven_bit", ["b", "a"])
def test_where_no_pair_can_leave_int16_the_model_is_exact(seven_bit):
    """7-bit B (|pair| <= 2*255*64) or 7-bit A (|pair| <= 2*127*128): exact, with zero points and batches."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        (m, n), k = rng.integers(1, 7, 2), int(rng.integers(1, 40))
        a = _u8(rng, (2, 1, m, k), 128 if seven_bit == "a" else 256)
        b = _s8(rng, (3, k, n), *((-64, 64) if seven_bit == "b" else (-128, 128)))
        a_zp, b_zp = np.uint8(rng.integers(0, 256)), _s8(rng, (3, 1, n))
        model = ort_u8s8_matmul_integer(a, b, a_zp, b_zp)
        assert model.shape == (2, 3, m, n)
        np.testing.assert_array_equal(model, exact_matmul_integer(a, b, a_zp, b_zp))
        operands = ort_gemm.matmul_operands(a, b, a_zp, b_zp)
        assert saturating_dot(operands.a, operands.b)[1] == 0


def test_a_batch_is_the_2d_model_of_each_broadcast_pair_of_matrices():
    rng = np.random.default_rng(4)
    a, b = _u8(rng, (2, 1, 5, 9)), _s8(rng, (3, 9, 4))
    a_zp, b_zp = np.uint8(17), _s8(rng, (3, 1, 4))
    batched = ort_u8s8_matmul_integer(a, b, a_zp, b_zp)
    for i in range(2):
        for j in range(3):
            one = ort_u8s8_matmul_integer(a[i, 0], b[j], a_zp, b_zp[j, 0])
            np.testing.assert_array_equal(batched[i, j], one)
    assert ort_u8s8_matmul_integer(a[0, 0, 0], b[0]).shape == (4,)  # a 1-D A, as numpy's matmul


def test_the_chunked_sum_equals_one_pass(monkeypatch):
    rng = np.random.default_rng(5)
    a, b, b_zp = _u8(rng, (6, 33)), _s8(rng, (33, 5)), _s8(rng, (5,))
    whole = ort_u8s8_matmul_integer(a, b, np.uint8(3), b_zp)
    monkeypatch.setattr(ort_gemm, "PAIR_CHUNK_ELEMENTS", 7)  # 7 // (6 * 5) -> one pair per step
    np.testing.assert_array_equal(ort_u8s8_matmul_integer(a, b, np.uint8(3), b_zp), whole)


def test_real_ort_gives_the_model_or_the_exact_result_and_the_predicate_says_which():
    """Path-independent: on a CPU without VNNI ORT gives the model's -32768, elsewhere the exact -65280."""
    builtin = _builtin_matmul_integer(EXAMPLE_A, EXAMPLE_B)
    verdict = explained_by_u8s8_saturation(EXAMPLE_A, EXAMPLE_B, None, None, builtin)
    if builtin.tolist() == [[-32768]]:
        assert verdict and verdict.saturated_pairs == 1 and verdict.max_abs_error == 32512
    else:
        assert builtin.tolist() == [[-65280]]
        assert not verdict and "the built-in result is exact" in verdict.reason


def test_real_ort_matches_the_model_wherever_its_kernel_cannot_saturate():
    """7-bit int8 B, and uint8 B (the exact u8 x u8 kernel): ORT equals the model and the exact result on
    every path, per-column zero points and broadcast batches included."""
    rng = np.random.default_rng(6)
    for _ in range(10):
        a, b7 = _u8(rng, (2, 3, 17)), _s8(rng, (17, 5), -64, 64)
        a_zp, b_zp = np.array([rng.integers(0, 256)], np.uint8), _s8(rng, (5,))
        builtin = _builtin_matmul_integer(a, b7, a_zp, b_zp)
        np.testing.assert_array_equal(builtin, ort_u8s8_matmul_integer(a, b7, a_zp, b_zp))
        assert explained_by_u8s8_saturation(a, b7, a_zp, b_zp, builtin).reason.startswith("no pair")
        b_u8 = _u8(rng, (17, 5))
        builtin = _builtin_matmul_integer(a, b_u8, a_zp, (b_zp.astype(np.int16) + 128).astype(np.uint8))
        np.testing.assert_array_equal(
            builtin, exact_matmul_integer(a, b_u8, a_zp, b_zp.astype(np.int16) + 128)
        )


def test_the_predicate_explains_a_batch_and_counts_what_the_model_changes():
    rng = np.random.default_rng(7)
    a, b = _u8(rng, (2, 1, 4, 10)), _s8(rng, (3, 10, 6))
    a_zp, b_zp = np.uint8(9), _s8(rng, (3, 1, 6))
    model = ort_u8s8_matmul_integer(a, b, a_zp, b_zp)
    exact = exact_matmul_integer(a, b, a_zp, b_zp)
    verdict = explained_by_u8s8_saturation(a, b, a_zp, b_zp, model)
    assert verdict.explained and verdict.reason == ""
    assert verdict.differing_outputs == np.count_nonzero(model != exact) > 0
    assert verdict.max_abs_error == np.abs(model - exact).max()
    assert verdict.saturated_pairs == sum(
        _brute_force(a[i, 0], b[j], a_zp, b_zp[j])[1] for i in range(2) for j in range(3)
    )


def test_the_predicate_says_why_not():
    a, b, model = EXAMPLE_A, EXAMPLE_B, ort_u8s8_matmul_integer(EXAMPLE_A, EXAMPLE_B)
    reasons = {
        "dtypes": explained_by_u8s8_saturation(a, b.astype(np.uint8), None, None, model).reason,
        "zero point": explained_by_u8s8_saturation(a, b, np.array([1, 2], np.uint8), None, model).reason,
        "B zero point": explained_by_u8s8_saturation(a, b, None, np.zeros(3, np.int8), model).reason,
        "output type": explained_by_u8s8_saturation(a, b, None, None, model.astype(np.int64)).reason,
        "output shape": explained_by_u8s8_saturation(a, b, None, None, model.reshape(1)).reason,
        "neither": explained_by_u8s8_saturation(a, b, None, None, model + 1).reason,
        "small": explained_by_u8s8_saturation(a // 2, b, None, None, model).reason,
    }
    assert (
        reasons["dtypes"] == "A is uint8 and B is uint8: only uint8 A with int8 B runs the saturating kernel"
    )
    assert "A's zero point must be a scalar" in reasons["zero point"]
    assert "B's zero point of shape (3,) does not fit B of shape (2, 1)" in reasons["B zero point"]
    assert reasons["output type"] == "the built-in result is int64 (1, 1), MatMulInteger gives int32 (1, 1)"
    assert reasons["output shape"] == "the built-in result is int32 (1,), MatMulInteger gives int32 (1, 1)"
    assert reasons["neither"] == (
        "1 of 1 outputs differ from the saturating model too, "
        "first at index (0, 0): built-in -32767, model -32768, exact -65280"
    )
    assert reasons["small"] == "no pair of adjacent products leaves int16: the kernel is exact here"


def test_clamped_pairs_that_cancel_out_explain_nothing():
    # pair 1: 255*-128 + 3*-120 = -33000 (clamped up by 232), pair 2: 255*126 + 11*79 = 32999 (down by 232)
    a, b = np.array([[255, 3, 255, 11]], np.uint8), np.array([[-128], [-120], [126], [79]], np.int8)
    model = ort_u8s8_matmul_integer(a, b)
    assert model.tolist() == exact_matmul_integer(a, b).tolist() == [[-1]]
    verdict = explained_by_u8s8_saturation(a, b, None, None, model)
    assert not verdict and verdict.saturated_pairs == 2 and "cancel out" in verdict.reason


def test_requantize_rounds_half_to_even_clamps_and_sends_nan_to_the_low_end():
    acc = np.array([1, 3, 5, -1000, 1000, 0], np.int32)
    scale = np.array([0.5, 0.5, 0.5, 1, 1, np.nan], np.float32)
    assert requantize(acc, scale, 10).tolist() == [10, 12, 12, 0, 255, 0]
    assert requantize(acc[:3], np.float32(0.5), 10, bias=np.array([1, 1, 1])).tolist() == [11, 12, 13]


def test_real_qlinear_matmul_and_qlinear_conv_match_the_requantized_model_with_seven_bit_weights():
    """No pair can saturate with weights in [-64, 63], so ORT gives these values on every path: this checks
    the requantization arithmetic and the convolution's geometry (groups, pads, strides, dilations) against
    real ORT; which products share a pair does not show here (tools/ort_u8s8_path.py measures it)."""
    rng = np.random.default_rng(8)
    a, b = _u8(rng, (5, 23)), _s8(rng, (23, 7), -64, 64)
    q = [np.float32(0.02), np.uint8(130), np.float32(0.03), np.int8(-3), np.float32(0.7), np.uint8(120)]
    inputs = {"a": a, "as": q[0], "az": q[1], "b": b, "bs": q[2], "bz": q[3], "ys": q[4], "yz": q[5]}
    model, feed = one_node_model(
        "QLinearMatMul", inputs, 13, initializers=("as", "az", "b", "bs", "bz", "ys", "yz")
    )
    expected = qlinear_matmul(a, q[0], q[1], b, q[2], q[3], q[4], q[5])
    np.testing.assert_array_equal(run_builtin(model, feed)[0], expected)

    x, w = _u8(rng, (2, 6, 5, 6)), _s8(rng, (4, 3, 2, 3), -64, 64)
    geometry = ConvGeometry(2, (1, 2), (1, 0, 1, 1), (2, 1))
    xq, yq = QuantParams(np.float32(0.02), np.uint8(40)), QuantParams(np.float32(0.3), np.uint8(100))
    wq = QuantParams(rng.uniform(0.01, 0.04, 4).astype(np.float32), np.zeros(4, np.int8) + 2)
    bias = rng.integers(-500, 500, 4).astype(np.int32)
    inputs = {"x": x, "xs": xq.scale, "xz": xq.zero_point, "w": w, "ws": wq.scale, "wz": wq.zero_point}
    inputs |= {"ys": yq.scale, "yz": yq.zero_point, "B": bias}
    attrs = dict(group=2, strides=[1, 2], pads=[1, 0, 1, 1], dilations=[2, 1], kernel_shape=[2, 3])
    model, feed = one_node_model("QLinearConv", inputs, 13, initializers=tuple(inputs)[1:], **attrs)
    expected = qlinear_conv(x, xq, w, wq, yq, bias, geometry)
    np.testing.assert_array_equal(run_builtin(model, feed)[0], expected)
    np.testing.assert_array_equal(expected, qlinear_conv(x, xq, w, wq, yq, bias, geometry, saturating=False))


def test_qlinear_models_saturate_except_depthwise_convolutions():
    rng = np.random.default_rng(9)
    a, b = np.full((1, 8), 255, np.uint8), np.full((8, 1), -128, np.int8)
    # acc = 8 * 255 * -128 = -261120 exactly, 4 * -32768 = -131072 saturated; y = 255 + round(acc * 1e-4)
    args = (a, 0.01, 0, b, 0.01, 0, 1.0, 255)
    assert qlinear_matmul(*args).tolist() == [[242]] and qlinear_matmul(*args, saturating=False).tolist() == [
        [229]
    ]
    x, w = np.full((1, 3, 4, 4), 255, np.uint8), _s8(rng, (3, 1, 3, 3), -128, -100)
    xq, wq, yq = QuantParams(0.01, 0), QuantParams(0.01, 0), QuantParams(1.0, 128)  # scale 1e-4
    depthwise = qlinear_conv(x, xq, w, wq, yq, geometry=ConvGeometry.of(2, group=3))
    exact = qlinear_conv(x, xq, w, wq, yq, geometry=ConvGeometry.of(2, group=3), saturating=False)
    np.testing.assert_array_equal(depthwise, exact)
    full = _s8(rng, (2, 3, 3, 3), -128, -100)
    assert not np.array_equal(
        qlinear_conv(x, xq, full, wq, yq), qlinear_conv(x, xq, full, wq, yq, saturating=False)
    )
    with pytest.raises(ValueError, match="one zero point for all"):
        qlinear_conv(x, xq, full, QuantParams(0.01, np.array([0, 1], np.int8)), yq)


def test_the_conv_gemm_sees_k_as_kernel_position_then_channel_padded_with_x_zero_point():
    x = np.arange(1, 13, dtype=np.uint8).reshape(1, 3, 1, 4)  # channels 1-4, 5-8, 9-12 along one row
    cols, out = ort_gemm.im2col_channels_last(x, (1, 2), ConvGeometry.of(2, pads=(0, 1, 0, 0)), 200)
    assert out == (1, 4) and cols.shape == (1, 1, 4, 6)
    assert cols[0, 0, 0].tolist() == [200, 200, 200, 1, 5, 9]  # the pad column first, then column 0
    assert cols[0, 0, 1].tolist() == [1, 5, 9, 2, 6, 10]
    w = np.arange(12, dtype=np.int8).reshape(2, 3, 1, 2)  # W[m, c, 0, position]
    assert ort_gemm.conv_weights_as_b(w, 1)[0, :, 1].tolist() == [6, 8, 10, 7, 9, 11]
    # with three channels the pair (K 2, K 3) joins channel 2 of position 0 with channel 0 of position 1


def test_only_pairs_that_can_leave_int16_are_summed_and_the_result_is_the_rule_pair_by_pair():
    """Columns of A near 255 only at some pairs of positions: the correction sums those pairs alone, and
    the model still equals the rule computed pair by pair; 7-bit values everywhere: no pair at all."""
    rng = np.random.default_rng(10)
    for _ in range(20):
        m, k, n = int(rng.integers(1, 5)), int(rng.integers(2, 14)), int(rng.integers(1, 5))
        a = _u8(rng, (m, k), 64)
        a[:, rng.integers(0, k, 2)] = 255
        b, a_zp, b_zp = _s8(rng, (k, n)), np.uint8(rng.integers(0, 256)), _s8(rng, (n,))
        expected, clamped = _brute_force(a, b, a_zp, b_zp)
        np.testing.assert_array_equal(ort_u8s8_matmul_integer(a, b, a_zp, b_zp), expected)
        operands = ort_gemm.matmul_operands(a, b, a_zp, b_zp)
        assert saturating_dot(operands.a, operands.b)[1] == clamped
    seven = ort_gemm.matmul_operands(_u8(rng, (3, 9)), _s8(rng, (9, 2), -64, 64))
    assert ort_gemm.pair_correction(seven.a, seven.b) == (None, 0)


def test_the_exact_dot_is_numpy_s_integer_product_on_both_of_its_paths():
    rng = np.random.default_rng(11)
    a, b = rng.integers(0, 256, (2, 4, 37)), rng.integers(-128, 128, (2, 37, 3))
    np.testing.assert_array_equal(ort_gemm.exact_dot(a, b), np.matmul(a, b))  # through float64
    big = np.array([[2**40, 3]], np.int64), np.array([[2**20], [1]], np.int64)  # past 2**53: integers
    assert ort_gemm.exact_dot(*big).tolist() == [[2**60 + 3]]


def test_both_paths_at_once_are_the_single_path_models():
    rng = np.random.default_rng(12)
    a, b, a_zp, b_zp = _u8(rng, (2, 1, 4, 9)), _s8(rng, (3, 9, 5)), np.uint8(9), _s8(rng, (3, 1, 5))
    paths = ort_gemm.matmul_integer_paths(a, b, a_zp, b_zp)
    np.testing.assert_array_equal(paths.saturating, ort_u8s8_matmul_integer(a, b, a_zp, b_zp))
    np.testing.assert_array_equal(paths.exact, exact_matmul_integer(a, b, a_zp, b_zp).astype(np.int32))
    operands = ort_gemm.matmul_operands(a, b, a_zp, b_zp)
    assert paths.clamped_pairs == saturating_dot(operands.a, operands.b)[1] > 0
    q = (np.float32(0.02), np.uint8(7), np.float32(0.01), np.int8(-1), np.float32(0.5), np.uint8(100))
    a2, b2 = a[0, 0], b[0]
    paths = ort_gemm.qlinear_matmul_paths(a2, q[0], q[1], b2, q[2], q[3], q[4], q[5])
    for saturating, got in ((True, paths.saturating), (False, paths.exact)):
        want = qlinear_matmul(a2, q[0], q[1], b2, q[2], q[3], q[4], q[5], saturating=saturating)
        np.testing.assert_array_equal(got, want)
    x, w = _u8(rng, (2, 4, 5, 5)), _s8(rng, (6, 2, 3, 2))
    geometry = ConvGeometry(2, (2, 1), (1, 0, 0, 1), (1, 2))
    xq, wq, yq = QuantParams(0.02, np.uint8(3)), QuantParams(0.01, np.int8(0)), QuantParams(0.7, np.uint8(9))
    bias = rng.integers(-900, 900, 6).astype(np.int32)
    paths = ort_gemm.qlinear_conv_paths(x, xq, w, wq, yq, bias, geometry)
    for saturating, got in ((True, paths.saturating), (False, paths.exact)):
        want = qlinear_conv(x, xq, w, wq, yq, bias, geometry, saturating=saturating)
        np.testing.assert_array_equal(got, want)
    assert paths.clamped_pairs > 0 and not np.array_equal(paths.saturating, paths.exact)
