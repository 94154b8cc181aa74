"""The progress line's ETA: taken over the steps run by this tracker, so a resumed loop's ETA is not
shortened by the steps finished before the resume."""
import attnlab.progress as progress


def _lines(capsys):
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


def test_eta_from_start(monkeypatch, capsys):
    clock = iter([0.0, 10.0, 20.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    p = progress.Progress(10, "run", min_interval=0.0)
    p.update(1)                       # one step in 10 s, nine left
    assert _lines(capsys)[-1].endswith("ETA 1m30s")


def test_eta_of_a_resumed_loop(monkeypatch, capsys):
    clock = iter([0.0, 5.0, 10.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    p = progress.Progress(2000, "run", min_interval=0.0)
    p.update(1556)                    # resumed at 1555: one step in 5 s, 444 left
    assert _lines(capsys)[-1].endswith("ETA 37m00s")
    p.update(1557)                    # two steps in 10 s, 443 left
    assert _lines(capsys)[-1].endswith("ETA 36m55s")


def test_resume_at_sets_the_position_without_counting_a_step(monkeypatch, capsys):
    clock = iter([0.0, 4.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    p = progress.Progress(100, "run", min_interval=0.0)
    p.resume_at(50)
    assert _lines(capsys) == []
    p.update()                        # step 51 in 4 s, 49 left
    assert _lines(capsys)[-1].endswith("ETA 3m16s")


def test_quiet_off_a_terminal_a_heartbeat_for_long_work(monkeypatch, capsys):
    """Where stderr is no terminal (capsys): nothing for work shorter than a minute, not even its last step;
    one line a minute for longer work, and then its end."""
    clock = iter([0.0, 1.0, 2.0, 30.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    p = progress.Progress(3, "short")
    for _ in range(3):
        p.update()
    assert _lines(capsys) == []
    clock = iter([0.0, 1.0, 61.0, 62.0, 100.0, 125.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    p = progress.Progress(5, "long")
    for _ in range(5):
        p.update()
    lines = _lines(capsys)
    assert [ln.split()[1] for ln in lines] == ["2/5", "5/5"]        # the heartbeat at 61 s, then the end
