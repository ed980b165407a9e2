"""Options: one typed object for every setting the pipeline reads."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class Options:
    forwarding: bool = True  # segmenter: replicate cheap input/factory chains into consumers
    device_model: str | None = None  # None: the real GPU when present, else the H200 model
    num_streams: int = 4  # host IR: numberOfStreams of the stream-parallel pass
    force_scheduler: str | None = None  # use this scheduler for every segment (if it accepts)
    sync_launches: bool = False  # wait after every kernel so a fault names it (slower: no queueing)
    # Replay a GPU run plan of several steps as one CUDA graph, inputs copied in and outputs
    # copied out, where calls through it are measured faster (engine.host.graph_plan).
    replay_graphs: bool = True
    heuristic_overrides: dict[str, Any] = field(default_factory=dict)
    # Segment id -> CUDA source that replaces the generated kernel (nvFuser's
    # NVFUSER_EXTERNAL_SRC): to try a hand edit, or to reproduce a faulty kernel. It must
    # define the same kernel name and parameters as the generated one.
    kernel_sources: dict[int, str] = field(default_factory=dict)

    def with_(self, **changes: Any) -> Options:
        return replace(self, **changes)

    def __post_init__(self) -> None:
        if self.num_streams < 1:
            raise ValueError(f"num_streams must be at least 1, got {self.num_streams}")
