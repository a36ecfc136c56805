"""What a registered version carries as code (fast: no training, no process): the pyfunc's import closure and the
SQL its prediction runs, laid out as in the project."""

from __future__ import annotations

from tasks.model.model_code import MODEL_SQL, model_code_folder, model_modules
from tasks.settings import PROJECT_ROOT

# the telemetry package is the ingest's (readers, MLflow source, lifecycle): the model carries the contract instead
OTHER_LAYERS = ("tasks/ingest/", "tasks/fetch/", "tasks/providers/", "tasks/prices/", "tasks/publishing/",
                "tasks/ranking/", "tasks/telemetry/", "tasks/model/training.py", "tasks/model/registry.py")


def test_the_model_carries_its_import_closure_and_nothing_of_the_other_layers() -> None:
    modules = [p.relative_to(PROJECT_ROOT).as_posix() for p in model_modules()]
    # the pyfunc, what it unpickles (the fitted candidates) and the contract features it runs: the contract's
    # normaliser and its SQL (the ingest's own), the feature SQL
    for needed in ("tasks/__init__.py", "tasks/model/serving.py", "tasks/model/structured.py",
                   "tasks/model/contract_rows.py", "tasks/contract/normalise.py", "tasks/contract/schema.py",
                   "tasks/contract/features.py"):
        assert needed in modules
    assert {"contract/rules.sql", "contract/cells.sql", "contract/spellings_to_look_up.sql",
            "contract/normalised_runs.sql", "features/build_features.sql"} <= set(MODEL_SQL)
    assert not [m for m in modules if m.startswith(OTHER_LAYERS)], modules
    # the storage layer (DDL, migrations, the landing zone): the feature SQL runs through tasks/sql_files.py alone
    assert "tasks/sql_files.py" in modules
    assert not {"tasks/warehouse.py", "tasks/landing_zone.py"} & set(modules), modules
    # no DDL: the in-memory database gets the reference schema and the contract's FLOPs macros, not the warehouse's
    assert not [f for f in MODEL_SQL if f.startswith("ddl/")], MODEL_SQL
    assert len(modules) + len(MODEL_SQL) <= 30


def test_the_code_folder_is_laid_out_as_the_project() -> None:
    with model_code_folder() as (package, sql):
        assert (package.name, sql.name) == ("tasks", "sql")
        assert (package / "model" / "serving.py").read_bytes() == (PROJECT_ROOT / "tasks/model/serving.py").read_bytes()
        assert sorted(p.relative_to(sql).as_posix() for p in sql.rglob("*.sql")) == sorted(MODEL_SQL)
    assert not package.exists()  # a temporary copy
