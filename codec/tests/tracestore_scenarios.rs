#![allow(clippy::unwrap_used)]
//! The codec acceptance scenarios 1-7 of `spec/tracestore.md` 20.1, literally (scenario 15,
//! every vector, is `tracestore_vectors.rs`).

use rowkit_codec::tracestore::cells::*;
use rowkit_codec::tracestore::keys::*;
use rowkit_codec::tracestore::ops::params_from;
use rowkit_codec::tracestore::*;

fn row(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap()
}

#[test]
fn s01_tile_keys() {
    for (index, key, ops_row) in [
        (0, 2147483647, ":ts:o:2147483647:"),
        (196, 2147483451, ":ts:o:2147483451:"),
        (1238947312, 908536335, ":ts:o:0908536335:"),
    ] {
        assert_eq!(tile_key(index), key);
        assert_eq!(row(ops_row_name(key)), ops_row);
    }
}

#[test]
fn s02_sharded_names() {
    let subkey = b",0=1,1=3,3=0,";
    assert_eq!(
        row(sharded_row_name(3, 't', 2147483646, subkey)),
        "03:ts:t:2147483646:,0=1,1=3,3=0,"
    );
    assert_eq!(
        row(sharded_row_name(3, 't', 57, subkey)),
        "03:ts:t:0000000057:,0=1,1=3,3=0,"
    );
    assert_eq!(
        row(sharded_row_name(3, 'd', 2147483646, b"aaa")),
        "03:ts:d:2147483646:aaa"
    );
}

#[test]
fn s03_subkey_extraction() {
    assert_eq!(extract_subkey(b":ts:o:2147483646:"), b"");
    assert_eq!(
        extract_subkey(b"03:ts:t:2147483646:,0=1,1=3,3=0,"),
        b",0=1,1=3,3=0,"
    );
    assert_eq!(extract_subkey(b"21:ts:d:0000000000:9e1"), b"9e1");
}

#[test]
fn s04_digest_bytes() {
    let d = "8db9913366b07bd14df9a68459e2958b";
    let bytes = [
        0x8d, 0xb9, 0x91, 0x33, 0x66, 0xb0, 0x7b, 0xd1, 0x4d, 0xf9, 0xa6, 0x84, 0x59, 0xe2, 0x95,
        0x8b,
    ];
    assert!(digest_to_cell("").is_empty());
    assert_eq!(cell_to_digest(&[]), "");
    assert_eq!(digest_to_cell(d), bytes);
    assert_eq!(cell_to_digest(&bytes), d);
    assert_eq!(digest_to_cell(&d.to_uppercase()), bytes);
    assert!(digest_to_cell("NOPE").is_empty());
    assert!(digest_to_cell("8db9913366b07b").is_empty());
    assert_eq!(cell_to_digest(&bytes[..7]), "");
}

#[test]
fn s05_tile_key_of_repo_index() {
    for (r, key, offset) in [
        (0, 2147483647, 0),
        (10, 2147483647, 10),
        (300, 2147483646, 44),
        (123456, 2147483165, 64),
    ] {
        let pos = repo_index_position(r).unwrap();
        assert_eq!((pos.tile_key, pos.offset), (key, offset), "{r}");
    }
}

#[test]
fn s06_calc_sharded_row_name() {
    for (tk, ty, subkey, want) in [
        (
            2147483647,
            't',
            ",0=1,1=3,3=0,",
            "09:ts:t:2147483647:,0=1,1=3,3=0,",
        ),
        (
            2147483647,
            't',
            ",0=1,1=3,9=0,",
            "13:ts:t:2147483647:,0=1,1=3,9=0,",
        ),
        (2147483540, 'd', "abc", "02:ts:d:2147483540:abc"),
        (2147483540, 'd', "bcd", "25:ts:d:2147483540:bcd"),
    ] {
        assert_eq!(row(calc_sharded_row_name(tk, ty, subkey.as_bytes())), want);
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn s07_ops_codec() {
    // §6.1's table.
    let mut ops = OrderedParamSet::new();
    ops.update(&[("arch".to_string(), strings(&["riscv", "arm"]))].into());
    assert_eq!(
        ops.encode_params(&params_from([("arch", "arm")])).unwrap(),
        ",0=1,"
    );
    let ops = OrderedParamSet::from_parts(
        strings(&["arch", "config"]),
        [
            ("arch".into(), strings(&["riscv"])),
            ("config".into(), strings(&["8888", "565", "gpu"])),
        ]
        .into(),
    );
    assert_eq!(
        ops.encode_params(&params_from([("arch", "riscv"), ("config", "gpu")]))
            .unwrap(),
        ",0=0,1=2,"
    );
    let names: Vec<String> = (0..100).map(|i| format!("test{i:02}")).collect();
    let mut ops = OrderedParamSet::from_parts(
        strings(&["config", "name", "arch"]),
        [
            ("config".into(), strings(&["8888", "565", "gpu"])),
            ("name".into(), names),
            ("arch".into(), strings(&["x86", "arm", "riscv"])),
        ]
        .into(),
    );
    // The update of scenario 7.
    ops.update(
        &[
            ("config".to_string(), strings(&["gles"])),
            ("arch".to_string(), strings(&["riscv"])),
            ("srgb".to_string(), strings(&["true", "false"])),
        ]
        .into(),
    );
    assert_eq!(
        ops.key_order(),
        strings(&["config", "name", "arch", "srgb"])
    );
    assert_eq!(
        ops.param_set()["config"],
        strings(&["8888", "565", "gpu", "gles"])
    );
    let enc = |p: &[(&str, &str)]| ops.encode_params(&params_from(p.iter().copied()));
    assert_eq!(
        enc(&[("config", "8888"), ("arch", "x86"), ("name", "test01")]).unwrap(),
        ",0=0,1=1,2=0,"
    );
    assert_eq!(
        enc(&[("config", "gles"), ("arch", "arm"), ("name", "test68")]).unwrap(),
        ",0=3,1=68,2=1,"
    );
    assert_eq!(enc(&[]).unwrap_err().to_string(), "No params encoded.");
    assert_eq!(
        enc(&[("config", "some unknown value")])
            .unwrap_err()
            .to_string(),
        "Unknown value"
    );
    // An empty OPS round-trips through gob.
    let empty = OrderedParamSet::new();
    assert_eq!(decode_ops_gob(&encode_ops_gob(&empty)).unwrap(), empty);
}
