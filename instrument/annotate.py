"""NVTX ranges per ``torch.nn.Module`` call, forward and backward, named by the module's path in the model.

:func:`module_paths` is the one naming function: a module's path is the name ``model.named_modules()`` gives it
(``layer3.1.conv2``; the model itself is ``""``). The range of a module call is named by its path; the call of the
model itself (or of any module called when no annotated range is open on the thread) is the parent range
``forward``, and its backward the parent range ``backward``. An nsys export of an annotated training step thus
holds ``rooflake:forward/layer3/layer3.1/layer3.1.conv2`` and ``rooflake:backward/layer3/layer3.1/layer3.1.conv2``.

Forward ranges come from module forward pre-hooks and forward hooks (``always_call``: an exception still pops).
Backward ranges come from hooks on the autograd graph's nodes, so they are pushed and popped by the thread that
runs the backward — on a GPU the autograd engine's device thread, which is why the kernels it launches fall inside
them (``torch.autograd.profiler.emit_nvtx`` and ranges pushed around ``loss.backward()`` on the calling thread miss
them). A module call's backward range opens before the first node created by the call runs (a pre-hook on the
nodes of its outputs) and closes once the call's last nodes — those whose inputs come from outside the call — have
run (post-hooks; nodes are told apart by the autograd sequence number, which counts nodes created on a thread).
NVTX push/pop ranges nest per thread: a backward range still open when a module that is not inside it begins is
closed first (two sibling branches whose backward the engine interleaves then show as consecutive ranges).
No custom autograd Function wraps any tensor, so in-place operations on module outputs (``ReLU(inplace=True)``)
work as without annotation, and no hook returns anything: results and gradients are unchanged.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import ContextDecorator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rooflake.schema import ToolMissingError

if TYPE_CHECKING:  # torch is the optional extra rooflake[torch]
    import torch

FORWARD = "forward"
BACKWARD = "backward"
NVTX_HINT = "pip install 'rooflake[torch]' (the `nvtx` package; Nsight Systems 2022.4 records nvtx<=0.2.11)"


def module_paths(model: torch.nn.Module) -> dict[torch.nn.Module, str]:
    """``{module: path}`` for every module of ``model``: the names ``model.named_modules()`` gives (``""`` for
    ``model`` itself, ``layer3.1.conv2`` for a nested one). A module registered under two names keeps the first.

    These paths name the NVTX ranges of :func:`annotate` and key the per-layer estimates, so ranges from a profile
    and estimates of the same model join on them: :func:`rooflake.instrument.estimate.estimate` traces the model
    inside :class:`annotate` itself and names each op by the innermost range open when it runs
    (tests/test_module_naming.py).
    """
    return {m: name for name, m in model.named_modules()}


def path_depth(path: str) -> int:
    """Nesting depth of a module path: 0 for the model (``""``), 1 for ``layer3``, 3 for ``layer3.1.conv2``."""
    return 0 if not path else path.count(".") + 1


class Emitter(Protocol):
    """Where ranges go: ``push(name)`` opens a push/pop range on the calling thread, ``pop()`` closes the
    innermost one."""

    def push(self, name: str) -> None: ...

    def pop(self) -> None: ...


class NvtxEmitter:
    """Push/pop ranges of one NVTX domain through the ``nvtx`` package (works on a CPU build of torch, where
    ``torch.cuda.nvtx`` raises). Registered strings and event attributes are built once per name.

    Raises :class:`ToolMissingError` when ``nvtx`` is not installed.
    """

    def __init__(self, domain: str = "rooflake") -> None:
        try:
            import nvtx
            from nvtx._lib import pop_range, push_range
        except ImportError as e:
            raise ToolMissingError(f"annotate needs the `nvtx` package: {NVTX_HINT}") from e
        self._domain = nvtx.get_domain(domain)
        self._handle = self._domain.handle
        self._push, self._pop = push_range, pop_range
        self._attrs: dict[str, Any] = {}

    def push(self, name: str) -> None:
        attrs = self._attrs.get(name)
        if attrs is None:
            attrs = self._attrs[name] = self._domain.get_event_attributes(name)
        self._push(attrs, self._handle)

    def pop(self) -> None:
        self._pop(self._handle)


@dataclass(eq=False, slots=True)
class _Call:
    """One module call: its range name, path parts (for ancestry) and, for the backward, how many of its last
    nodes are still to run."""

    name: str
    parts: tuple[str, ...]
    seq_start: int = 0
    remaining: int = 0
    heads: list[Any] | None = None
    entries: list[Any] | None = None

    def contains(self, other: _Call) -> bool:
        """True when ``other`` is a module strictly inside this call's module."""
        return len(self.parts) < len(other.parts) and other.parts[: len(self.parts)] == self.parts


class _Thread(threading.local):
    def __init__(self) -> None:
        self.forward: list[_Call] = []  # open forward calls on this thread
        self.top_forward = False  # the parent range `forward` is open
        self.backward: list[_Call] = []  # open backward ranges on this thread (the first may be `backward`)
        self.armed: list[_Call] = []  # calls of the current top-level forward with backward nodes


def _tensors(obj: Any, tensor: type) -> Iterator[Any]:
    """Tensors (instances of ``tensor``) in a module's output: tensors, tuples, lists, dicts, nested."""
    if isinstance(obj, tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            yield from _tensors(o, tensor)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o, tensor)


def _last_nodes(heads: list[Any], start: int, end: int) -> list[Any]:
    """Nodes of the call (sequence number in [start, end)) reachable from ``heads`` whose inputs all come from
    outside the call: once they have run, the call's backward is done (every other node of it runs before one of
    them)."""
    seen: set[Any] = set()
    todo, out = list(heads), []
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        inner = [n for n, _ in node.next_functions if n is not None and start <= n._sequence_nr() < end]
        if inner:
            todo.extend(inner)
        else:
            out.append(node)
    return out


class annotate(ContextDecorator):  # noqa: N801 - used like a function: `with annotate(model):`
    """Push/pop one NVTX range per module call of ``model`` while the block (or decorated function) runs.

    ``with annotate(model): loss = model(x).sum(); loss.backward()`` records, in NVTX domain ``domain``, the
    ranges ``forward`` > ``layer1`` > ``layer1.0`` > ``layer1.0.conv1`` … (one per module call, named by
    :func:`module_paths`, nested as the modules nest) and, with ``backward=True``, ``backward`` > ``layer1`` > …
    around each call's backward, pushed on the thread the autograd engine runs it on. ``depth`` limits the ranges to
    modules at most that deep (1: the model's children only; None: every module). ``emitter`` replaces the NVTX
    output (anything with ``push(name)`` / ``pop()``; default :class:`NvtxEmitter` of ``domain``).

    Every hook is removed on exit; graph-node hooks of graphs built inside the block become inert (they go with
    their graph). Results and gradients are unchanged: no hook returns a value, no tensor is wrapped. Without a
    profiler attached, an NVTX push/pop is a call into a no-op; the cost is the Python hooks (``make bench``).
    Raises :class:`ToolMissingError` without the ``nvtx`` package (and no ``emitter``).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        domain: str = "rooflake",
        depth: int | None = None,
        backward: bool = True,
        emitter: Emitter | None = None,
    ) -> None:
        self.model, self.domain, self.depth, self.backward = model, domain, depth, backward
        self._emitter = emitter
        self._handles: list[Any] = []
        self._entered = 0
        self._active = False
        self._tls = _Thread()

    def __enter__(self) -> annotate:
        self._entered += 1
        if self._entered == 1:
            self._install()
        return self

    def __exit__(self, *exc: object) -> None:
        self._entered -= 1
        if self._entered == 0:
            self._uninstall()

    def _install(self) -> None:
        import torch

        self.emitter: Emitter = self._emitter or NvtxEmitter(self.domain)
        self._seq = torch._C._autograd._get_sequence_nr  # nodes created so far on this thread
        self._grad_enabled = torch.is_grad_enabled
        self._tensor = torch.Tensor
        for module, path in module_paths(self.model).items():
            if self.depth is not None and path_depth(path) > self.depth:
                continue
            parts = tuple(path.split(".")) if path else ()
            self._handles.append(
                module.register_forward_pre_hook(functools.partial(self._pre, path, parts), with_kwargs=True)
            )
            self._handles.append(module.register_forward_hook(self._post, with_kwargs=True, always_call=True))
        self._active = True

    def _uninstall(self) -> None:
        self._active = False
        for h in self._handles:
            h.remove()
        self._handles.clear()
        tls = self._tls  # balance this thread's stack (other threads' ranges close with their nodes)
        while tls.backward:
            tls.backward.pop()
            self.emitter.pop()
        tls.armed.clear()

    # forward -------------------------------------------------------------------------------------------------
    def _pre(self, path: str, parts: tuple[str, ...], module: Any, args: Any, kwargs: Any) -> None:
        if not self._active:
            return
        tls = self._tls
        if not tls.forward:
            tls.top_forward = True
            self.emitter.push(FORWARD)
        call = _Call(path if parts else FORWARD, parts)
        if parts:
            self.emitter.push(path)
        tls.forward.append(call)
        if self.backward:
            call.seq_start = self._seq()

    def _post(self, module: Any, args: Any, kwargs: Any, output: Any) -> None:
        tls = self._tls
        if not tls.forward:  # hooks removed mid-call, or a call that began before the block
            return
        call = tls.forward.pop()
        if call.parts:
            self.emitter.pop()
        if self.backward and self._active and output is not None:
            self._arm(call, output)
        if not tls.forward:
            self.emitter.pop()  # `forward`
            tls.top_forward = False
            armed, tls.armed = tls.armed, []
            self._register(armed)

    def _arm(self, call: _Call, output: Any) -> None:
        """Find the call's backward nodes: heads (of its outputs) and last nodes (see :func:`_last_nodes`)."""
        if not self._grad_enabled():
            return
        end = self._seq()
        heads: list[Any] = []
        for t in _tensors(output, self._tensor):
            node = t.grad_fn
            if node is not None and call.seq_start <= node._sequence_nr() < end and node not in heads:
                heads.append(node)
        if not heads:  # nothing of the call's own is differentiated (nn.Identity, a frozen layer)
            return
        call.heads, call.entries = heads, _last_nodes(heads, call.seq_start, end)
        call.name = call.name if call.parts else BACKWARD
        self._tls.armed.append(call)

    def _register(self, calls: list[_Call]) -> None:
        """One pre-hook and one post-hook per node: outer calls begin first, inner calls end first."""
        begins: dict[Any, list[_Call]] = {}
        ends: dict[Any, list[_Call]] = {}
        for call in sorted(calls, key=lambda c: len(c.parts)):
            call.remaining = len(call.entries or ())
            for node in call.heads or ():
                begins.setdefault(node, []).append(call)
            for node in call.entries or ():
                ends.setdefault(node, []).insert(0, call)
            call.heads = call.entries = None
        for node, cs in begins.items():
            node.register_prehook(functools.partial(self._begin, cs))
        for node, cs in ends.items():
            node.register_hook(functools.partial(self._end, cs))

    # backward (runs on the autograd engine's thread) ------------------------------------------------------------
    def _begin(self, calls: list[_Call], grad_outputs: Any) -> None:
        if not self._active:
            return
        stack = self._tls.backward
        for call in calls:
            if call in stack:
                continue
            while stack and not stack[-1].contains(call):
                stack.pop()
                self.emitter.pop()
            if not stack and call.parts:  # a module called on its own: its backward goes under `backward`
                stack.append(_Call(BACKWARD, (), remaining=-1))
                self.emitter.push(BACKWARD)
            stack.append(call)
            self.emitter.push(call.name)

    def _end(self, calls: list[_Call], grad_inputs: Any, grad_outputs: Any) -> None:
        if not self._active:
            return
        stack = self._tls.backward
        for call in calls:
            call.remaining -= 1
            if call.remaining > 0 or call not in stack:
                continue
            while stack:
                top = stack.pop()
                self.emitter.pop()
                if top is call:
                    break
            if len(stack) == 1 and stack[0].remaining == -1:  # only the synthetic `backward` is left
                stack.pop()
                self.emitter.pop()
