"""The training command line (``python -m attnconv.train``)."""
import pytest

import attnconv.experiments.train_cli as cli_mod
from attnconv.experiments.profiles import make_config


def test_cli(tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit) as e:
        cli_mod.main(["--help"])
    assert e.value.code == 0 and "--run-dir" in capsys.readouterr().out
    seen = {}

    def fake_train(config, run_dir, resume=False, progress=True):
        seen.update(config=config, run_dir=run_dir, resume=resume, progress=progress)
        return {"epochs": [{"test_acc": 0.5}]}

    monkeypatch.setattr(cli_mod, "train", fake_train)
    rc = cli_mod.main(["--model", "generalized", "--profile", "cpu", "--run-dir", str(tmp_path), "--epochs", "2",
                         "--resume", "--seed", "4", "--no-progress"])
    assert rc == 0 and seen["resume"] and not seen["progress"]
    assert seen["config"] == make_config("generalized", "cpu", epochs=2, seed=4)
    with pytest.raises(SystemExit):
        cli_mod.main(["--model", "vit", "--run-dir", str(tmp_path)])
