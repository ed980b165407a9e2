"""The renderers shared by the TUI and the CLI: colouring and the listing's cursor stops."""

from __future__ import annotations

import pytest

from engine import load_fusion
from fusescope import samples
from fusescope.render.highlight import STYLES, highlight
from fusescope.render.listing import split_listing
from tests.fusescope.fusions import build_seed001


def styled(text: str, **kw: str) -> dict[str, set[str]]:
    """Substring -> names of the styles laid on exactly that substring."""
    by_style = {v: k for k, v in STYLES.items()}
    assert len(by_style) == len(STYLES), "each kind of token needs a style of its own"
    out: dict[str, set[str]] = {}
    for span in highlight(text, **kw).spans:
        out.setdefault(text[span.start : span.end], set()).add(by_style[span.style])
    return out


def test_highlight_keeps_the_text_and_colours_each_kind_of_token() -> None:
    listing = str(build_seed001(split_t4=True).fusion)
    assert highlight(listing).plain == listing
    s = styled(listing)
    assert s["T2"] == {"tensor"} and s["l"] == {"memory"} and s["float"] >= {"dtype"}
    assert s["reduction"] == {"op"} and s["squeeze"] == {"op"}
    assert s["iS1{4096}"] == {"iterdomain"} and s["bS0{1}"] == {"iterdomain"}
    assert s["Inputs:"] == {"section"} and s["%kernel_math"] == {"section"}
    assert s["initial value"] == {"attribute"}


def test_highlight_of_a_transform_block() -> None:
    t4 = build_seed001(split_t4=True).fusion.outputs[0]
    from engine.ir.printer import transforms_block

    s = styled(transforms_block(t4))
    assert s["Split"] == {"transform"}
    assert s["logical domain :"] == {"label"} and s["contiguity:"] == {"label"}
    assert s["iS11{4096}"] == {"iterdomain"}


def test_selected_tensor_is_marked_wherever_it_appears() -> None:
    listing = str(build_seed001().fusion)
    marked = [listing[sp.start : sp.end] for sp in highlight(listing, selected="T3").spans if sp.style == STYLES["selected"]]
    assert marked == ["T3_l_float[bS7{1}, iS8{4096}, bS9{1}]"] * 2  # its definition and its use
    # T1 must not mark T10..T19 (there are none here, but names are matched whole).
    assert all(m.startswith("T1_") for m in
               (listing[sp.start : sp.end] for sp in highlight(listing, selected="T1").spans
                if sp.style == STYLES["selected"]))


def test_split_listing_of_seed001() -> None:
    entries = split_listing(str(build_seed001().fusion))
    assert [e.tensor for e in entries] == [
        None, "T0", None, "T4", "T6", None, None, "T1", "T2", "T3", "T4", "T5", "T6", None,
    ]
    add = entries[10].text.splitlines()
    assert add == [
        "T4_g_float[bS10{1}, iS11{4096}, iS12{4096}]",
        "   = T0_g_float[bS0{1}, iS1{4096}, iS2{4096}]",
        "   + T3_l_float[bS7{1}, iS8{4096}, bS9{1}];",
    ]


@pytest.mark.parametrize("sample", samples.list_samples(), ids=lambda s: s.name)
def test_split_listing_gives_every_sample_listing_back(sample: samples.Sample) -> None:
    listing = str(load_fusion(str(sample.path)).fusion)
    entries = split_listing(listing)
    assert "\n".join(e.text for e in entries) + "\n" == listing
    # Every expression is a cursor stop for its output tensor.
    math = listing.split("%kernel_math {\n")[1].split("} // %kernel_math")[0]
    defined = [line.split("_")[0] for line in math.splitlines() if line.startswith("T")]
    assert [e.tensor for e in entries[-len(defined) - 1 : -1]] == defined


def test_an_edge_label_too_long_for_its_box_keeps_its_bytes() -> None:
    from fusescope.model import EdgeInfo, SegmentInfo
    from fusescope.render.graph import draw

    def segment(sid: int) -> SegmentInfo:
        return SegmentInfo(sid, "pointwise", 3, 0, (), (), "", "", None, None, None, None, None, None, None, ())

    many = tuple(f"T{k}" for k in range(20, 32))
    drawing = draw([segment(0), segment(1), segment(2)],
                   [EdgeInfo(0, 1, many, 3 << 20), EdgeInfo(0, 2, ("T5",), 4096)], width=100)
    lines = drawing.text.plain.splitlines()
    assert " ├▶ g1 T20, T21, T2… 3.0 MiB" in lines  # the tensor list gives way, not the bytes
    assert any(ln.rstrip().endswith("└▶ g2 T5 4.0 KiB") for ln in lines)  # short labels as before
