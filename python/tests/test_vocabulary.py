"""One vocabulary on every surface: the Python enums against the golden file and `memhal info --json`."""
import json
import subprocess

import pytest

import memhal

VOCABULARIES = ["MemoryKind", "DType", "PixelFormat", "Compression", "CpuAccess", "MemoryDomainKind"]


def test_every_golden_row_is_an_enum_member_with_that_code_and_wire_string(golden_rows):
    for vocabulary, code, wire, aliases in golden_rows:
        enum = getattr(memhal, vocabulary)
        member = getattr(enum, wire.upper())
        assert member.code == code, (vocabulary, wire)
        assert str(member) == wire
        assert enum.from_code(code) == member
        assert enum.from_string(wire) == member
        assert enum.from_string(wire.upper()) == member
        for alias in aliases:
            assert enum.from_string(alias) == member, (vocabulary, alias)
            assert enum.from_string(alias.upper()) == member


def test_every_enum_member_has_a_golden_row(golden_rows):
    for vocabulary in VOCABULARIES + ["ErrorCode"]:
        golden = {wire.upper(): code for v, code, wire, _ in golden_rows if v == vocabulary}
        members = {name: member.code for name, member in getattr(memhal, vocabulary).__members__.items()}
        assert members == golden, vocabulary


def test_every_error_code_has_its_own_error_class(golden_rows):
    seen = set()
    for vocabulary, code, wire, _ in golden_rows:
        if vocabulary != "ErrorCode":
            continue
        assert getattr(memhal.ErrorCode, wire.upper()).code == code
        cls = memhal.UnimplementedError if wire == "not_implemented" else getattr(
            memhal, "".join(part.capitalize() for part in wire.split("_")) + "Error")
        assert issubclass(cls, memhal.Error)
        seen.add(code)
    assert seen == set(range(1, 14))


def test_unknown_codes_and_strings_are_rejected_not_guessed():
    with pytest.raises(memhal.InvalidArgumentError) as info:
        memhal.MemoryKind.from_code(6)
    assert info.value.code == memhal.ErrorCode.INVALID_ARGUMENT
    assert "6" in info.value.message
    with pytest.raises(ValueError):  # InvalidArgumentError is also a ValueError
        memhal.PixelFormat.from_code(0)
    with pytest.raises(memhal.InvalidArgumentError, match="dmabuf2"):
        memhal.MemoryKind.from_string("dmabuf2")
    with pytest.raises(memhal.InvalidArgumentError):
        memhal.Tensor((2,), dtype="f128")


def test_vocabulary_arguments_take_members_strings_aliases_and_codes():
    for spelling in (memhal.MemoryKind.MEM, "mem", "MEM", 0):
        assert memhal.Tensor((1,), "u8", memory=spelling).memory == memhal.MemoryKind.MEM
    assert memhal.Tensor.image(4, 2, "gray", memory="mem").pixel_format == memhal.PixelFormat.GREY


def test_memory_kinds_match_memhal_info_json(memhal_cli):
    out = subprocess.run([memhal_cli, "info", "--json"], check=True, capture_output=True, text=True).stdout
    kinds = json.loads(out)["memory_kinds"]
    assert [k["name"] for k in kinds] == [str(m) for m in memhal.MemoryKind.__members__.values()]
    for entry in kinds:
        member = memhal.MemoryKind.from_string(entry["name"])
        assert member.code == entry["code"]
        answer = memhal.availability(member)
        assert answer.available == entry["available"], entry
        assert answer.reason == entry["reason"], entry


def test_the_enum_constructors_refuse_unknown_codes_as_from_code_does(golden_rows):
    for vocabulary in VOCABULARIES + ["ErrorCode"]:
        enum = getattr(memhal, vocabulary)
        codes = {code for v, code, _, _ in golden_rows if v == vocabulary}
        for code in codes:
            member = enum(code)  # a known code still builds its named member
            assert member.code == code and member.name in enum.__members__, (vocabulary, code)
            assert enum(member) == member
        for unknown in (max(codes) + 1, 7 if 7 not in codes else 999, 1 << 40, -1):
            with pytest.raises(memhal.InvalidArgumentError) as info:
                enum(unknown)
            assert isinstance(info.value, ValueError), vocabulary
            assert vocabulary in info.value.message and str(unknown) in info.value.message, info.value.message
        with pytest.raises(memhal.InvalidArgumentError):
            enum(2.5)
    assert memhal.MemoryKind("dmabuf") == memhal.MemoryKind.DMABUF  # as from_string
    with pytest.raises(memhal.InvalidArgumentError):
        memhal.PixelFormat(0)  # 0 is no pixel format
