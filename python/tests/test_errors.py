"""B5, B2: every error kind and decline reason of the shared table (skillcache-binding) has its
Python class and is documented; a server's own text never becomes `str(e)`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import skillcache
from skillcache import _errors, _skillcache


def quoted(doc: str | None) -> set[str]:
    return set(re.findall(r'"([a-z_]+)"', doc or ""))


def test_b5_every_error_kind_class_and_decline_reason_is_mapped() -> None:
    table = _skillcache.error_kinds()
    assert len(table["kinds"]) > 20
    for cls, kind in table["kinds"]:
        assert issubclass(getattr(_errors, cls), _errors.Error), (cls, kind)
        assert f'"{kind}"' in (getattr(_errors, cls).__doc__ or "") or cls.lower().startswith(
            kind.replace("_", "")
        ), f"{cls} does not document kind {kind!r}"
    for cls, parent in table["classes"]:
        base = _errors.Error if parent is None else getattr(_errors, parent)
        assert issubclass(getattr(_errors, cls), base), (cls, parent)
    assert set(table["decline_reasons"]) <= quoted(_errors.DeclinedError.__doc__)
    assert set(table["offline_misses"]) <= quoted(_errors.OfflineError.__doc__)
    assert set(table["mismatches"]) <= quoted(_errors.VerifyError.__doc__)


def test_b5_a_refused_option_is_a_config_error_and_still_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(skillcache.ConfigError) as caught:
        skillcache.SkillCache(tmp_path / "root", key_file=tmp_path / "k", approval="notRequired")
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == (
        "approval must be one of 'required', 'not_required', not 'notRequired'"
    )
    with pytest.raises(skillcache.ConfigError, match="origin_quota must be a whole number"):
        skillcache.SkillCache(tmp_path / "root", key_file=tmp_path / "k", origin_quota=-1)


def test_b2_an_error_is_raised_as_the_packages_class_after_a_host_rebinds_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extension took its classes when it loaded: a dependency that rebinds a name in
    `skillcache._errors` (to `KeyError`, so a handler for `StoreError` would miss the error)
    changes nothing the package raises."""
    original = _errors.StoreError
    monkeypatch.setattr(_errors, "StoreError", KeyError)
    monkeypatch.setattr(_errors, "Error", KeyError)
    with pytest.raises(original) as caught:
        skillcache.LockFile.read(tmp_path / "absent.lock")
    assert not isinstance(caught.value, KeyError)
    assert isinstance(caught.value, skillcache.Error)

