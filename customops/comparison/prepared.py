"""What compare's steps hand on: the model as compared with its rewrite and the values to look at
(:class:`Prepared`), the model on both sides as it is and with those values as outputs
(:class:`WholeRuns`), and a model with named values made graph outputs (:func:`with_outputs`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import ModelProto, NodeProto, helper

from customops.eval.running.sides import SideRun

__all__ = ["Prepared", "WholeRuns", "with_outputs"]


@dataclass
class Prepared:
    """The model as compared (restored if it came rewritten), its rewrite, and what to look at."""

    model: ModelProto
    rewritten: ModelProto
    swapped: list[Any]
    """The rewriter's records of the main graph's swapped nodes."""
    all_swapped: list[Any]
    skipped: list[Any]
    nodes: dict[str, NodeProto]
    exposed: list[str]
    """Values made graph outputs to see inside the model: each swapped node's output and inputs."""
    types: dict[str, int]
    initializers: dict[str, np.ndarray]


def with_outputs(model: ModelProto, names: Sequence[str], types: dict[str, int]) -> ModelProto:
    """A copy of ``model`` with each value of ``names`` (empty names and outputs already there left out)
    made a graph output, typed from ``types`` where the type is known."""
    out = ModelProto()
    out.CopyFrom(model)
    present = {o.name for o in out.graph.output}
    for name in names:
        if name and name not in present:
            elem = types.get(name)
            if elem:
                out.graph.output.append(helper.make_tensor_value_info(name, elem, None))
            else:
                out.graph.output.append(helper.make_empty_tensor_value_info(name))
            present.add(name)
    return out


@dataclass
class WholeRuns:
    """The model on each side as it is (``a``, ``b``: outputs, errors, per-node times) and with the
    exposed values as outputs (``a_exposed``, ``b_exposed``)."""

    a: SideRun
    b: SideRun
    a_exposed: SideRun
    b_exposed: SideRun
