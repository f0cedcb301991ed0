"""Google's Python Bigtable client (google-cloud-bigtable) against a server at BIGTABLE_EMULATOR_HOST.

Uses both of the package's clients as their users do: the classic `google.cloud.bigtable.Client`
(admin=True) for table admin and its row API, and the newer `google.cloud.bigtable.data` client
(sync). Each step runs on its own rows; the expected values are literals written here, never read
from the server under test. Prints one line per step and exits 1 if any step failed.

Usage: BIGTABLE_EMULATOR_HOST=HOST:PORT python test_clients.py PROJECT INSTANCE TABLE_PREFIX
"""

import datetime
import os
import sys
import time
import traceback

from google.cloud import bigtable
from google.cloud.bigtable import column_family as cf_rules
from google.cloud.bigtable import row_filters as classic_filters
from google.cloud.bigtable.data import (
    BigtableDataClient,
    DeleteAllFromRow,
    MutationsExceptionGroup,
    ReadRowsQuery,
    RowMutationEntry,
    RowRange,
    SetCell,
)
from google.cloud.bigtable.data import row_filters as data_filters
from google.cloud.bigtable.data.read_modify_write_rules import AppendValueRule, IncrementRule

PROJECT, INSTANCE, PREFIX = sys.argv[1:4]
ADMIN_TABLE = f"{PREFIX}_admin"
DATA_TABLE = f"{PREFIX}_data"
# Bigtable timestamps are microseconds at millisecond granularity.
T1, T2, T3 = 1_000_000, 2_000_000, 3_000_000

classic = bigtable.Client(project=PROJECT, admin=True)
instance = classic.instance(INSTANCE)
data = BigtableDataClient(project=PROJECT)


def pattern(seed: str, n: int) -> bytes:
    """n printable bytes that differ per seed, so swapped or shifted chunks do not compare equal."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += f"{seed}.{i};".encode()
        i += 1
    return bytes(out[:n])


def cells_of(row) -> dict:
    """A data-client Row as {(family, qualifier): [values newest first]}."""
    out = {}
    for cell in row.cells:
        out.setdefault((cell.family, cell.qualifier), []).append(cell.value)
    return out


def step_admin():
    table = instance.table(ADMIN_TABLE)
    table.create(
        column_families={
            "versions": cf_rules.MaxVersionsGCRule(2),
            "aged": cf_rules.MaxAgeGCRule(datetime.timedelta(days=7)),
            "both": cf_rules.GCRuleIntersection(
                [cf_rules.MaxVersionsGCRule(3), cf_rules.MaxAgeGCRule(datetime.timedelta(hours=1))]
            ),
            # No GC rule at all: the map entry must still carry an (empty) ColumnFamily.
            "plain": None,
        }
    )
    assert ADMIN_TABLE in [t.table_id for t in instance.list_tables()], "created table not listed"
    families = table.list_column_families()
    assert sorted(families) == ["aged", "both", "plain", "versions"], sorted(families)
    assert families["versions"].gc_rule == cf_rules.MaxVersionsGCRule(2), families["versions"].gc_rule
    assert families["aged"].gc_rule == cf_rules.MaxAgeGCRule(datetime.timedelta(days=7)), families["aged"].gc_rule
    assert families["both"].gc_rule == cf_rules.GCRuleIntersection(
        [cf_rules.MaxVersionsGCRule(3), cf_rules.MaxAgeGCRule(datetime.timedelta(hours=1))]
    ), families["both"].gc_rule
    assert families["plain"].gc_rule is None, families["plain"].gc_rule

    table.column_family("added", cf_rules.MaxVersionsGCRule(1)).create()
    table.column_family("versions", cf_rules.MaxVersionsGCRule(5)).update()
    table.column_family("aged").delete()
    families = table.list_column_families()
    assert sorted(families) == ["added", "both", "plain", "versions"], sorted(families)
    assert families["added"].gc_rule == cf_rules.MaxVersionsGCRule(1), families["added"].gc_rule
    assert families["versions"].gc_rule == cf_rules.MaxVersionsGCRule(5), families["versions"].gc_rule

    table.delete()
    assert ADMIN_TABLE not in [t.table_id for t in instance.list_tables()], "deleted table still listed"
    assert not table.exists(), "deleted table still exists"


def step_classic_writes_and_reads():
    table = instance.table(DATA_TABLE)
    row = table.direct_row(b"classic#1")
    row.set_cell("cf", b"name", b"Ada", timestamp=datetime.datetime.fromtimestamp(1, datetime.timezone.utc))
    row.set_cell("cf", b"name", b"Ada L.", timestamp=datetime.datetime.fromtimestamp(2, datetime.timezone.utc))
    row.set_cell("meta", b"lang", b"en")
    row.commit()
    got = table.read_row(b"classic#1")
    assert got is not None, "row not found"
    assert [c.value for c in got.cells["cf"][b"name"]] == [b"Ada L.", b"Ada"], got.cells["cf"][b"name"]
    assert got.cells["meta"][b"lang"][0].value == b"en"

    latest = table.read_row(b"classic#1", filter_=classic_filters.CellsColumnLimitFilter(1))
    assert [c.value for c in latest.cells["cf"][b"name"]] == [b"Ada L."]

    rows = [table.direct_row(f"classic#batch{i}".encode()) for i in range(3)]
    for i, r in enumerate(rows):
        r.set_cell("cf", b"n", str(i).encode(), timestamp=datetime.datetime.fromtimestamp(1, datetime.timezone.utc))
    statuses = table.mutate_rows(rows)
    assert [s.code for s in statuses] == [0, 0, 0], statuses
    read = table.read_rows(start_key=b"classic#batch", end_key=b"classic#batch~")
    assert [(r.row_key, r.cells["cf"][b"n"][0].value) for r in read] == [
        (b"classic#batch0", b"0"),
        (b"classic#batch1", b"1"),
        (b"classic#batch2", b"2"),
    ]


def step_classic_conditional_and_rmw():
    table = instance.table(DATA_TABLE)
    seed = table.direct_row(b"classic#cond")
    seed.set_cell("cf", b"state", b"open")
    seed.commit()
    cond = table.conditional_row(
        b"classic#cond",
        filter_=classic_filters.RowFilterChain(
            [classic_filters.ColumnQualifierRegexFilter(b"state"), classic_filters.ValueRegexFilter(b"open")]
        ),
    )
    cond.set_cell("cf", b"result", b"was-open", state=True)
    cond.set_cell("cf", b"result", b"was-not-open", state=False)
    assert cond.commit() is True, "predicate should have matched"
    cond2 = table.conditional_row(b"classic#cond", filter_=classic_filters.ValueRegexFilter(b"closed"))
    cond2.set_cell("cf", b"other", b"was-closed", state=True)
    cond2.set_cell("cf", b"other", b"was-not-closed", state=False)
    assert cond2.commit() is False, "predicate should not have matched"
    got = table.read_row(b"classic#cond")
    assert got.cells["cf"][b"result"][0].value == b"was-open"
    assert got.cells["cf"][b"other"][0].value == b"was-not-closed"

    rmw = table.append_row(b"classic#rmw")
    rmw.increment_cell_value("cf", b"count", 5)
    rmw.append_cell_value("cf", b"log", b"a")
    out = rmw.commit()
    assert out["cf"][b"count"][0][0] == (5).to_bytes(8, "big"), out
    rmw = table.append_row(b"classic#rmw")
    rmw.increment_cell_value("cf", b"count", -7)
    rmw.append_cell_value("cf", b"log", b"bc")
    out = rmw.commit()
    assert out["cf"][b"count"][0][0] == (-2).to_bytes(8, "big", signed=True), out
    assert out["cf"][b"log"][0][0] == b"abc", out


def step_data_writes_conditional_rmw():
    table = data.get_table(INSTANCE, DATA_TABLE)
    table.mutate_row(b"data#1", [SetCell("cf", b"q", b"v1", T1), SetCell("cf", b"q", b"v2", T2)])
    row = table.read_row(b"data#1")
    assert cells_of(row) == {("cf", b"q"): [b"v2", b"v1"]}, cells_of(row)

    matched = table.check_and_mutate_row(
        b"data#1",
        data_filters.ValueRegexFilter(b"v2"),
        true_case_mutations=[SetCell("cf", b"flag", b"yes", T1)],
        false_case_mutations=[SetCell("cf", b"flag", b"no", T1)],
    )
    assert matched is True
    matched = table.check_and_mutate_row(
        b"data#1",
        data_filters.ValueRegexFilter(b"absent"),
        true_case_mutations=[SetCell("cf", b"flag2", b"yes", T1)],
        false_case_mutations=[SetCell("cf", b"flag2", b"no", T1)],
    )
    assert matched is False
    # No predicate: true when the row has any cell; the row does not exist yet.
    matched = table.check_and_mutate_row(
        b"data#empty", None, false_case_mutations=[SetCell("cf", b"created", b"1", T1)]
    )
    assert matched is False
    row = table.read_row(b"data#1")
    assert cells_of(row)[("cf", b"flag")] == [b"yes"]
    assert cells_of(row)[("cf", b"flag2")] == [b"no"]
    assert cells_of(table.read_row(b"data#empty")) == {("cf", b"created"): [b"1"]}

    out = table.read_modify_write_row(b"data#rmw", [IncrementRule("cf", b"n", 41), AppendValueRule("cf", b"s", b"x")])
    out = table.read_modify_write_row(b"data#rmw", [IncrementRule("cf", b"n", 1), AppendValueRule("cf", b"s", b"yz")])
    got = cells_of(out)
    assert got[("cf", b"n")] == [(42).to_bytes(8, "big")], got
    assert got[("cf", b"s")] == [b"xyz"], got

    table.bulk_mutate_rows(
        [RowMutationEntry(f"data#bulk{i:02d}".encode(), [SetCell("cf", b"i", str(i).encode(), T1)]) for i in range(20)]
    )
    table.bulk_mutate_rows([RowMutationEntry(b"data#bulk05", [DeleteAllFromRow()])])
    rows = table.read_rows(ReadRowsQuery(row_ranges=RowRange(b"data#bulk", b"data#bulk~")))
    assert [r.row_key for r in rows] == [f"data#bulk{i:02d}".encode() for i in range(20) if i != 5]
    # A mutation to a family the table lacks fails that entry alone.
    failed_keys = None
    try:
        table.bulk_mutate_rows(
            [
                RowMutationEntry(b"data#ok", [SetCell("cf", b"q", b"1", T1)]),
                RowMutationEntry(b"data#bad", [SetCell("nosuchfamily", b"q", b"1", T1)]),
            ]
        )
    except MutationsExceptionGroup as err:
        failed_keys = [e.entry.row_key for e in err.exceptions]
    assert failed_keys == [b"data#bad"], failed_keys
    assert table.read_row(b"data#ok") is not None
    assert table.read_row(b"data#bad") is None


def step_data_filtered_reads():
    table = data.get_table(INSTANCE, DATA_TABLE)
    for i in range(5):
        table.mutate_row(
            f"filt#{i}".encode(),
            [
                SetCell("cf", b"a", f"a{i}-old".encode(), T1),
                SetCell("cf", b"a", f"a{i}".encode(), T2),
                SetCell("cf", b"b", f"b{i}".encode(), T3),
                SetCell("meta", b"m", f"m{i}".encode(), T1),
            ],
        )
    scope = RowRange(b"filt#", b"filt#~")

    def read(flt, **kw):
        return [(r.row_key, cells_of(r)) for r in table.read_rows(ReadRowsQuery(row_ranges=scope, row_filter=flt, **kw))]

    got = read(data_filters.FamilyNameRegexFilter("meta"))
    assert got == [(f"filt#{i}".encode(), {("meta", b"m"): [f"m{i}".encode()]}) for i in range(5)], got
    got = read(data_filters.RowFilterChain([data_filters.ColumnQualifierRegexFilter(b"a"), data_filters.CellsColumnLimitFilter(1)]))
    assert got == [(f"filt#{i}".encode(), {("cf", b"a"): [f"a{i}".encode()]}) for i in range(5)], got
    got = read(data_filters.TimestampRangeFilter(start=datetime.datetime.fromtimestamp(3, datetime.timezone.utc)))
    assert got == [(f"filt#{i}".encode(), {("cf", b"b"): [f"b{i}".encode()]}) for i in range(5)], got
    got = read(data_filters.RowKeyRegexFilter(b"filt#[13]"))
    assert [k for k, _ in got] == [b"filt#1", b"filt#3"], got
    got = read(data_filters.ValueRangeFilter(start_value=b"b2", end_value=b"b3", inclusive_end=True))
    assert got == [(b"filt#2", {("cf", b"b"): [b"b2"]}), (b"filt#3", {("cf", b"b"): [b"b3"]})], got
    got = read(data_filters.RowFilterChain([data_filters.FamilyNameRegexFilter("cf"), data_filters.StripValueTransformerFilter(True)]), limit=2)
    assert got == [
        (f"filt#{i}".encode(), {("cf", b"a"): [b"", b""], ("cf", b"b"): [b""]}) for i in range(2)
    ], got
    got = read(
        data_filters.ConditionalRowFilter(
            data_filters.ValueRegexFilter(b"m4"),
            true_filter=data_filters.ColumnQualifierRegexFilter(b"b"),
            false_filter=data_filters.BlockAllFilter(True),
        )
    )
    assert got == [(b"filt#4", {("cf", b"b"): [b"b4"]})], got
    labelled = list(table.read_rows(ReadRowsQuery(row_keys=[b"filt#0"], row_filter=data_filters.RowFilterChain(
        [data_filters.FamilyNameRegexFilter("meta"), data_filters.ApplyLabelFilter("seen")]))))
    assert [c.labels for c in labelled[0].cells] == [["seen"]], labelled
    assert table.row_exists(b"filt#2") and not table.row_exists(b"filt#nope")


def step_sample_row_keys():
    table = data.get_table(INSTANCE, DATA_TABLE)
    table.bulk_mutate_rows(
        [RowMutationEntry(f"sample#{i:05d}".encode(), [SetCell("cf", b"v", pattern(str(i), 1024), T1)]) for i in range(3000)]
    )
    samples = table.sample_row_keys()
    assert samples, "no samples"
    keys = [k for k, _ in samples]
    offsets = [o for _, o in samples]
    assert offsets == sorted(offsets), samples
    assert [k for k in keys if k] == sorted(k for k in keys if k), "sample keys out of order"
    assert any(keys), f"no split point in a table of {len(samples)} sample(s) over 3 MB: {samples[:3]}"
    # Classic client: the same call, a list of SampleRowKeysResponse.
    classic_samples = list(instance.table(DATA_TABLE).sample_row_keys())
    assert classic_samples, "classic client: no samples"


def step_initial_splits():
    # Production's samples are its tablet boundaries, so a table created pre-split at g and p
    # samples at least there.
    table = instance.table(f"{PREFIX}_splits")
    table.create(initial_split_keys=[b"g", b"p"], column_families={"cf": None})
    try:
        data_table = data.get_table(INSTANCE, f"{PREFIX}_splits")
        data_table.bulk_mutate_rows(
            [RowMutationEntry(k, [SetCell("cf", b"q", b"1", T1)]) for k in (b"a", b"h", b"q", b"z")]
        )
        keys = [k for k, _ in data_table.sample_row_keys()]
        assert b"g" in keys and b"p" in keys, f"initial splits g and p not among the samples {keys}"
    finally:
        table.delete()


def step_big_rows():
    table = data.get_table(INSTANCE, DATA_TABLE)
    big = pattern("big", 2 << 20)
    table.mutate_row(b"big#cell", [SetCell("cf", b"big", big, T1)])
    wide = {f"q{i:04d}".encode(): pattern(f"q{i:04d}", 1024) for i in range(1500)}
    table.mutate_row(b"big#wide", [SetCell("cf", q, v, T1) for q, v in wide.items()])
    got = table.read_row(b"big#cell")
    assert got is not None and cells_of(got) == {("cf", b"big"): [big]}, "2 MiB cell differs"
    got = table.read_row(b"big#wide")
    assert got is not None and cells_of(got) == {("cf", q): [v] for q, v in wide.items()}, "1 500-cell row differs"
    rows = list(table.read_rows(ReadRowsQuery(row_ranges=RowRange(b"big#", b"big#~"))))
    assert [r.row_key for r in rows] == [b"big#cell", b"big#wide"]
    assert cells_of(rows[0]) == {("cf", b"big"): [big]}
    assert len(rows[1].cells) == 1500
    classic_row = instance.table(DATA_TABLE).read_row(b"big#cell")
    assert classic_row.cells["cf"][b"big"][0].value == big, "classic client: 2 MiB cell differs"



def step_huge_cell():
    """A 100 MiB cell (Bigtable's cell limit), written by the classic client and read back by
    both: over BIGTABLE_EMULATOR_HOST the data client keeps gRPC's 4 MiB receive limit, so the
    server must spread a row that large over responses (Google's emulator sends it whole, and
    this client cannot read it there)."""
    huge = os.urandom(100 << 20)
    row = instance.table(DATA_TABLE).direct_row(b"huge#cell")
    row.set_cell("cf", b"huge", huge, timestamp=datetime.datetime.fromtimestamp(1, datetime.timezone.utc))
    row.commit()
    got = data.get_table(INSTANCE, DATA_TABLE).read_row(b"huge#cell")
    assert got is not None and len(got.cells) == 1 and got.cells[0].value == huge, "data client: 100 MiB cell differs"
    classic_row = instance.table(DATA_TABLE).read_row(b"huge#cell")
    assert classic_row.cells["cf"][b"huge"][0].value == huge, "classic client: 100 MiB cell differs"

STEPS = [
    ("admin: create with GC rules, list, modify families, delete", step_admin),
    ("classic client: writes, reads, mutate_rows", step_classic_writes_and_reads),
    ("classic client: conditional and read-modify-write", step_classic_conditional_and_rmw),
    ("data client: writes, check-and-mutate, read-modify-write, bulk", step_data_writes_conditional_rmw),
    ("data client: filtered reads", step_data_filtered_reads),
    ("sample row keys", step_sample_row_keys),
    ("sample row keys: a table's initial splits", step_initial_splits),
    ("2 MiB cell and a row of 1 500 cells of 1 KiB", step_big_rows),
    ("a 100 MiB cell, written and read back by both clients", step_huge_cell),
]


def main() -> int:
    failed = 0
    try:
        instance.table(DATA_TABLE).create(column_families={"cf": None, "meta": None})
    except Exception as err:
        # The steps still run: each fails on its own if the table is missing.
        failed += 1
        print(f"python: FAIL setup: create table {DATA_TABLE}: {err}".splitlines()[0])
    for name, fn in STEPS:
        started = time.monotonic()
        try:
            fn()
            print(f"python: PASS {name} ({time.monotonic() - started:.1f} s)")
        except Exception as err:
            failed += 1
            first = (str(err) or type(err).__name__).strip().splitlines()[0]
            print(f"python: FAIL {name}: {type(err).__name__}: {first}")
            traceback.print_exc(file=sys.stderr)
    try:
        instance.table(DATA_TABLE).delete()
    except Exception as err:
        failed += 1
        print(f"python: FAIL cleanup: delete table {DATA_TABLE}: {err}".splitlines()[0])
    data.close()
    print(f"python: {failed} failure(s) in {len(STEPS)} steps")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
