import pytest

from engine.config import Options
from engine.runtime import device
from engine.trace import Trace


def test_trace_keeps_stages_and_events():
    t = Trace()
    t.stage("fusion_ir_original", "a")
    t.stage("fusion_ir_original", "b")
    assert list(t.stages) == ["fusion_ir_original", "fusion_ir_original#2"]
    e = t.event("can_schedule", "pointwise", "no support for reduction ops", group=0)
    assert str(e) == "[can_schedule] pointwise: no support for reduction ops"
    assert t.of_kind("can_schedule") == [e] and t.about("pointwise") == [e] and len(t) == 1


def test_device_models_and_default():
    default = device.model()
    assert default.name == "NVIDIA H200 (model)"  # the reference chip
    assert default.sm_count == 132 and default.arch == "sm_90" and not default.measured
    assert device.model("a100").sm_count == 108
    with pytest.raises(ValueError, match="unknown device model"):
        device.model("V100")
    assert device.current("H200").memory_bandwidth_gbps > device.model("H100").memory_bandwidth_gbps


def test_options_are_validated_and_immutable():
    o = Options()
    assert o.with_(forwarding=False).forwarding is False and o.forwarding is True
    with pytest.raises(ValueError, match="num_streams"):
        Options(num_streams=0)
