"""``customops.comparison``: the comparison as a Python call, for CI and notebooks (no shelling out)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from customops.comparison.choices import Choices
from customops.comparison.inputs import InputPlan, check_inputs, load_inputs
from customops.comparison.pipeline import compare_model
from customops.comparison.results import Report
from customops.errors import CustomOpsError
from customops.eval.running.sides import REFERENCE_TIMEOUT
from customops.eval.running.worker import KERNEL_TIME_RUNS


def compare(
    model: Any,
    inputs: Mapping[str, np.ndarray] | str | os.PathLike[str] | None = None,
    *,
    ops: Sequence[str] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
    dims: Mapping[str, int] | None = None,
    reference_limit: int | None = None,
    providers: Sequence[str] | None = None,
    tolerances: Mapping[str, tuple[float | None, float | None]] | None = None,
    check_error_stat: str | Mapping[str, str] = "elemwise",
    error_quantile: float | Mapping[str, float] | None = None,
    infinities_compare_equal: bool = False,
    reference_timeout: float = REFERENCE_TIMEOUT,
    graph_optimization_level: str = "all",
    nodes: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    validate: bool = False,
    fail_fast: bool = False,
    kernel_times: bool = False,
) -> Report:
    """Run ``model`` (a ModelProto, serialized bytes or a path) with ORT's built-in kernels and with ours,
    node by node, with onnx.reference as third vote; returns the typed report (``.verdict``: 'agree',
    'disagree', 'failed', 'invalid' (``validate`` found NaN or inf) or 'nothing-to-compare' (no node
    swapped: neither side run); ``.summary``; ``.nodes``; ``.outputs``; ``.amplified``; ``.validation``;
    ``.stopped``; ``.to_json()`` is the document of ``customops compare --json``). ``inputs``: arrays
    by graph input name, an .npz file or an ONNX test-case directory; None draws them from the declared
    types and shapes (``seed``; symbolic dimensions from ``dims``, else 4, then 32, 64 and 320 while both
    sides fail alike: docs/compare.md, Inputs). ``providers``: the built-in side's execution providers (ORT names or aliases: cpu, cuda,
    tensorrt, dml, openvino, coreml; default CPU); ours run on CPU. ``tolerances``: (rtol, atol) by
    tensor name (graph outputs, swapped nodes' outputs; None: the global one). ``check_error_stat`` and
    ``error_quantile``: one value for every tensor, or values by tensor name with ``""`` for every other
    one, as Polygraphy's comparator takes them (``--check-error-stat [NAME:]STAT``, ``--error-quantile
    [NAME:]Q``). Every other keyword is the option of the same name (``infinities_compare_equal`` is
    ``--infinities-compare-equal``, ``kernel_times`` ``--kernel-times``: each node's ``time_us``). Raises CustomOpsError for bad input, as the command
    exits 2. Longer than 60 lines: a keyword per option of the command, each passed on."""
    from customops.model.rewriter import as_model

    started = time.perf_counter()
    onnx_model = as_model(model)
    feed, plan = _feed(onnx_model, inputs, seed, dims)
    name = str(model) if isinstance(model, (str, os.PathLike)) else "<model>"
    comparison = compare_model(
        onnx_model,
        check_inputs(onnx_model, feed),
        ops=ops,
        rtol=rtol,
        atol=atol,
        reference_limit=reference_limit,
        model_name=name,
        seed=seed,
        providers=providers,
        tolerances=dict(tolerances or {}),
        check_error_stat=check_error_stat,
        error_quantile=error_quantile,
        infinities_compare_equal=infinities_compare_equal,
        reference_timeout=reference_timeout,
        graph_optimization_level=graph_optimization_level,
        plan=plan,
        started=started,
        choices=Choices(None if nodes is None else list(nodes), list(exclude), validate, fail_fast),
        repeats=KERNEL_TIME_RUNS if kernel_times else 0,
    )
    return comparison.report


def _feed(
    model: Any, inputs: Any, seed: int, dims: Mapping[str, int] | None
) -> tuple[dict[str, np.ndarray], InputPlan | None]:
    """The arrays ``compare`` feeds, and how they were generated (None: given)."""
    if inputs is None:
        plan = InputPlan(model, seed, dict(dims or {}))
        return plan.generate(), plan
    if isinstance(inputs, Mapping):
        return {str(k): np.asarray(v) for k, v in inputs.items()}, None
    if isinstance(inputs, (str, os.PathLike)):
        return load_inputs(inputs, model), None
    raise CustomOpsError(f"inputs must be a dict of arrays, a path or None, not {type(inputs).__name__}")
