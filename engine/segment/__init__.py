"""Segmentation: split a fusion into groups that schedulers accept (nvFuser's segmenter)."""

from engine.segment.graph import SegmentedEdge, SegmentedFusion, SegmentedGroup
from engine.segment.segmenter import segment_fusion

__all__ = ["SegmentedEdge", "SegmentedFusion", "SegmentedGroup", "segment_fusion"]
