import pytest

from metasched.model.machines import CONFIGS, MachineConfig, parse_machines


def test_table_1_configurations() -> None:
    expected = {
        "m64": "4x64 + 6x32 + 8x8",
        "m128": "4x128",
        "m256": "2x256",
        "m384": "1x384 + 1x64 + 4x16",
        "m512": "1x512",
    }
    assert {key: cfg.describe() for key, cfg in CONFIGS.items()} == expected
    for key, cfg in CONFIGS.items():
        assert cfg.total_procs == 512, key
        assert cfg.max_size == int(key[1:]), key
    assert CONFIGS["m64"].n_sites == 18


def test_parse_names_and_lists() -> None:
    assert parse_machines("m128") is CONFIGS["m128"]
    assert parse_machines("128, 128,256").sizes == (128, 128, 256)
    assert parse_machines("2x64+3*8").sizes == (64, 64, 8, 8, 8)
    assert parse_machines(" 2x64 + 8 ").key == "2x64+8"


@pytest.mark.parametrize("spec", ["", "m1000", "0", "4x0", "0x4", "abc", "3,,-2"])
def test_parse_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(ValueError, match="machine"):
        parse_machines(spec)


def test_config_validates() -> None:
    with pytest.raises(ValueError, match="no machines"):
        MachineConfig("x", ())
    with pytest.raises(ValueError, match="positive"):
        MachineConfig("x", (4, -1))
