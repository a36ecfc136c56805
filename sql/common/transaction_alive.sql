-- Any statement: fails with a TransactionException once the current transaction is aborted
-- (tasks/telemetry/readers.py::transaction_usable).
select 1 as alive
