"""``kernlink fuzz``: the campaign is reproducible, bounded, parallel-safe, and reports bugs with
shrunk reproducers; the command prints its table and exits 1 only on a checker bug."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from checker.clauses.l_pair import PairClause
from checker.composition import Composition, Owned
from contract_lang import ast as A
from fuzzing.campaign import Campaign
from fuzzing.check import Checker, Outcome
from fuzzing.compositions.catalogue import MUTATION_KINDS
from fuzzing.compositions.edit import Mutation
from fuzzing.mutation import reproducer, shrink
from fuzzing.oracles import OracleResult, ProtocolOracle
from fuzzing.subject import Subject, load_subject
from kernlink.api import check
from kernlink.cli import main
from placement.adapter import Placed

ROOT = Path(__file__).resolve().parents[2]
RING = str(ROOT / "specs" / "examples" / "ring" / "ring.kp")


@pytest.fixture(scope="module")
def ring() -> Subject:
    return load_subject([RING])


class RefuteRings:
    """A fake independent check that refutes every accepted mutant whose rings changed."""

    name = "fake"

    def __init__(self, subject: Subject) -> None:
        self.subject = subject

    def check(self, comp: Composition, placed: Placed | None, clauses: frozenset[str]) -> OracleResult:
        base = {str(r.item) for sides in load_rings(self.subject) for r in sides}
        now = {str(r.item) for sides in comp.rings.values() for r in sides}
        return OracleResult(True, () if now == base else ("fake: the ring changed",))


def load_rings(subject: Subject) -> Iterator[tuple[Owned[A.Ring], ...]]:
    from checker.resolve import resolve

    pipeline = subject.inputs.pipeline
    assert pipeline is not None
    yield from resolve(pipeline, subject.name, subject.inputs.candidates).rings.values()


def test_baseline_is_accepted_and_the_plan_walks_every_single_edit(ring: Subject) -> None:
    campaign = Campaign(ring, seed=5, oracles=[])
    assert campaign.baseline() == []
    plan = campaign.plan
    singles = [plan.mutation(i) for i in range(plan.singles)]
    assert Counter(m.edits[0] for m in singles if m is not None) == Counter(plan.catalogue)
    stacked = plan.mutation(plan.singles)
    assert stacked is not None and len(stacked.edits) == 2


def test_same_seed_same_campaign_and_jobs_do_not_matter(ring: Subject) -> None:
    one = Campaign(ring, seed=11, oracles=[]).run(examples=40)
    again = Campaign(ring, seed=11, oracles=[]).run(examples=40, jobs=2)
    other = Campaign(ring, seed=12, oracles=[]).run(examples=40)
    assert [(o.index, o.mutation, o.classification) for o in one.outcomes] == [
        (o.index, o.mutation, o.classification) for o in again.outcomes
    ]
    assert [o.mutation for o in one.outcomes] != [o.mutation for o in other.outcomes]


def test_a_time_budget_checks_a_prefix_of_the_plan(ring: Subject) -> None:
    timed = Campaign(ring, seed=3, oracles=[]).run(seconds=0.3)
    assert [o.index for o in timed.outcomes] == list(range(len(timed.outcomes)))
    assert timed.stopped in ("time budget", "plan exhausted")
    replay = Campaign(ring, seed=3, oracles=[]).run(examples=len(timed.outcomes))
    assert [o.classification for o in replay.outcomes] == [o.classification for o in timed.outcomes]


def test_single_edits_only_stop_when_the_catalogue_is_exhausted(ring: Subject) -> None:
    report = Campaign(ring, seed=1, max_edits=1, kinds=("ring-depth",), oracles=[]).run(examples=10_000)
    assert report.stopped == "plan exhausted"
    assert 0 < len(report.outcomes) < 50
    assert {o.kind for o in report.outcomes} == {"ring-depth"}
    assert any(o.classification.codes == ("L-DEPTH",) for o in report.outcomes)


def test_every_rejection_of_a_reference_mutant_names_a_clause(ring: Subject) -> None:
    report = Campaign(ring, seed=2, max_edits=1).run(examples=10_000)
    assert not report.bugs, [b[0].classification for b in report.bugs]
    rejected = [o for o in report.outcomes if o.classification.status == "rejected"]
    assert rejected and all(
        o.classification.codes and all(c.startswith(("L-", "E-SOLVER")) for c in o.classification.codes)
        for o in rejected
    )


def test_a_refuted_mutant_is_a_bug_shrunk_to_the_culprit_edit(ring: Subject) -> None:
    checker = Checker(ring, oracles=[RefuteRings(ring)])
    plan = Campaign(ring, seed=0, max_edits=1, oracles=[]).plan
    culprit = next(
        e
        for e in plan.catalogue
        if e.kind in ("proxy", "init-role", "ring-depth") and checker.check(Mutation((e,))).status == "bug"
    )
    harmless = [
        e
        for e in plan.catalogue
        if e.kind in ("launch", "role-regs") and checker.check(Mutation((e,))).status == "accepted"
    ]
    assert len(harmless) >= 2
    noisy = Mutation((harmless[0], culprit, harmless[1]))
    verdict = checker.check(noisy)
    assert verdict.status == "bug" and verdict.bug == "oracle" and verdict.by == "fake"
    assert shrink(checker, noisy, verdict).edits == (culprit,)
    text = reproducer(checker, Mutation((culprit,)))
    assert text.startswith("# stage `ring.loader`") and 'stage "ring.loader"' in text


def test_a_clause_that_raises_is_a_bug(ring: Subject, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(self: PairClause, comp: Composition) -> Iterator[object]:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(PairClause, "check", explode)
    campaign = Campaign(ring, seed=0, max_edits=1, oracles=[])
    out = campaign.run_one(0)
    assert out is not None and out.classification.status == "bug" and out.classification.bug == "internal"
    assert "boom" in out.classification.problems[0]


def test_the_command_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fuzz", RING, "--seed", "4", "--examples", "80", "--jobs", "1", "--color", "never"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "seed 4, 80 mutants" in out
    for word in (
        "mutation",
        "rejected by",
        "accepted mutants",
        "total",
        "no checker bugs found",
        "independent re-verification of accepted mutants: placement",
    ):
        assert word in out
    assert f"replay: kernlink fuzz {RING} --seed 4 --examples 80" in out


def test_json_for_ci(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fuzz", RING, "--seed", "9", "--examples", "50", "--jobs", "1", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["seed"] == 9 and data["mutants"] == 50 and data["bugs"] == []
    assert sum(row["mutants"] for row in data["kinds"]) == 50
    assert all(row["kind"] in MUTATION_KINDS or row["kind"].endswith("edits") for row in data["kinds"])
    assert len(data["accepted"]) == sum(row["accepted"] for row in data["kinds"])


def test_the_command_exits_1_on_a_bug_and_writes_reproducers(
    tmp_path: Path, ring: Subject, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("fuzzing.oracles._REGISTERED_ORACLES", [RefuteRings(ring)])
    code = main(
        [
            "fuzz",
            RING,
            "--seed",
            "1",
            "--examples",
            "200",
            "--edits",
            "1",
            "--jobs",
            "1",
            "--kinds",
            "proxy,ring-depth,launch",
            "--out",
            str(tmp_path),
            "--color",
            "never",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1, out
    assert "checker bug(s)" in out and "fake: the ring changed" in out and "shrunk to 1 edit(s)" in out
    folders = sorted(tmp_path.iterdir())
    assert folders and all((f / "pipeline.kp").is_file() and (f / "stages.kc").is_file() for f in folders)
    result = check([str(folders[0] / "pipeline.kp")])
    assert result.composition is not None


def test_a_rejected_composition_is_not_fuzzed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = Path(RING).parent
    for name in ("loader.kc", "reduce.kc"):
        (tmp_path / name).write_text((source / name).read_text().replace("depth 2..6", "depth 6..2"))
    (tmp_path / "ring.kp").write_text(
        (source / "ring.kp")
        .read_text()
        .replace(' from "build/loader.kpkg"', "")
        .replace(' from "build/reduce.kpkg"', "")
    )
    code = main(["fuzz", str(tmp_path / "ring.kp"), "--examples", "5", "--color", "never"])
    assert code == 1
    assert "rejected before any mutation" in capsys.readouterr().out


def test_list_kinds_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fuzz", "--list-kinds", "--color", "never"]) == 0
    listed = capsys.readouterr().out
    assert all(kind in listed for kind in MUTATION_KINDS)
    assert main(["fuzz", RING, "--kinds", "no-such-kind"]) == 2
    assert main(["fuzz", RING, "--examples", "0"]) == 2
    assert main(["fuzz", RING, "--ignore", "L-NOPE"]) == 2
    assert main(["fuzz"]) == 2


def test_the_protocol_explorer_catches_what_a_silent_model_misses(
    ring: Subject, monkeypatch: pytest.MonkeyPatch
) -> None:
    from checker.clauses import CLAUSES

    def silent(self: object, comp: Composition, ctx: object = None) -> Iterator[object]:
        return iter(())

    for cls in CLAUSES:
        if cls.code in ("L-ARRIVE", "L-TXBYTES", "L-PARITY", "L-RACE", "L-DEADLOCK"):
            monkeypatch.setattr(cls, "check", silent)
            monkeypatch.setattr(cls, "check_in", silent)
    checker = Checker(ring, oracles=[ProtocolOracle()])
    plan = Campaign(ring, seed=0, max_edits=1, oracles=[]).plan
    dropped = next(e for e in plan.catalogue if e.kind == "drop-wait")
    verdict = checker.check(Mutation((dropped,)))
    assert verdict.status == "bug" and verdict.by == "protocol", verdict
    assert any("L-RACE" in p or "L-DEADLOCK" in p for p in verdict.problems)
    ignoring = Checker(
        ring, clauses=[c for c in CLAUSES if c.code not in ("L-RACE", "L-DEADLOCK")], oracles=[ProtocolOracle()]
    )
    unchecked = ignoring.check(Mutation((dropped,)))
    assert not any(code in p for p in unchecked.problems for code in ("L-RACE", "L-DEADLOCK")), unchecked


@pytest.fixture(scope="module")
def moe4() -> Subject:
    return load_subject([str(Path(__file__).resolve().parents[2] / "specs" / "examples" / "moe4" / "moe4.kp")])


def _moe4_unfilled(subject: Subject) -> Mutation:
    plan = Campaign(subject, seed=0, max_edits=1, oracles=[]).plan
    edit = next(e for e in plan.catalogue if e.kind == "drop-arrive" and getattr(e.item, "side", "") == "produce")
    return Mutation((edit,))


def test_moe4_without_its_full_arrive_is_rejected(moe4: Subject) -> None:
    """Issue 12 item 1: the mutant was listed as accepted, with no checker bug."""
    verdict = Checker(moe4).check(_moe4_unfilled(moe4))
    assert verdict.status == "rejected" and "L-ARRIVE" in verdict.codes, verdict


def test_the_contract_oracle_does_not_share_the_models_blind_spot(
    moe4: Subject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the model's clauses silenced, the oracle built from the contracts refutes the accept."""
    from checker.clauses import CLAUSES

    def silent(self: object, comp: Composition, ctx: object = None) -> Iterator[object]:
        return iter(())

    for cls in CLAUSES:
        if cls.code in ("L-ARRIVE", "L-TXBYTES", "L-PARITY", "L-RACE", "L-DEADLOCK"):
            monkeypatch.setattr(cls, "check", silent)
            monkeypatch.setattr(cls, "check_in", silent)
    verdict = Checker(moe4, oracles=[ProtocolOracle()]).check(_moe4_unfilled(moe4))
    assert verdict.status == "bug" and verdict.by == "protocol", verdict
    assert any("L-ARRIVE" in p for p in verdict.problems)


def test_the_contract_oracle_skips_what_it_does_not_run_and_the_campaign_says_so() -> None:
    """The explorer runs every CTA the steps reach (the persistent example's `multicast` runs in its
    2-CTA cluster), but a run larger than its state budget it does not judge. An accepted mutant it
    did not re-verify is counted as such, with the reason, never as agreement. The attention family
    (`once`, lagged sides, `lag`/`peeled` rendezvous) and the ring example it runs, and finds them safe."""
    from fuzzing.contract_oracle import unmodelled
    from fuzzing.report import Report

    persistent = ROOT / "specs" / "examples" / "gemm_swiglu" / "persistent" / "gemm_swiglu_persistent.kp"
    cluster = check([str(persistent)])
    assert cluster.composition is not None and cluster.placed is not None
    assert unmodelled(cluster.composition) is None
    why = "more than 50 states"
    result = ProtocolOracle(max_states=50).check(cluster.composition, cluster.placed, frozenset({"L-DEADLOCK"}))
    assert not result.applicable and not result.problems and result.skipped == why
    for kp in (RING, str(ROOT / "specs" / "examples" / "attention" / "attention.kp")):
        plain = check([kp])
        assert plain.composition is not None and unmodelled(plain.composition) is None
        ran = ProtocolOracle().check(plain.composition, plain.placed, frozenset({"L-DEADLOCK", "L-RACE"}))
        assert ran.applicable and not ran.problems, ran

    subject = load_subject([str(persistent)])
    baseline = Checker(subject, oracles=[ProtocolOracle(max_states=50)]).check(Mutation(()))
    assert baseline.status == "accepted" and baseline.unverified == (f"protocol: {why}",)
    report = Report(subject.name, 0, [Outcome(0, Mutation(()), baseline, 0.0)], 1.0, 1, 0, ("protocol",))
    assert report.unverified() == {f"protocol: {why}": 1} and report.verified() == 0
    assert report.to_json(subject.bundle)["unverified"] == {f"protocol: {why}": 1}
    attention = load_subject([str(ROOT / "specs" / "examples" / "attention" / "attention.kp")])
    ran = Checker(attention, oracles=[ProtocolOracle()]).check(Mutation(()))
    assert ran.status == "accepted" and ran.unverified == ()
    report = Report(attention.name, 0, [Outcome(0, Mutation(()), ran, 0.0)], 1.0, 1, 0, ("protocol",))
    assert report.verified() == 1 and report.to_json(attention.bundle)["verified"] == 1
