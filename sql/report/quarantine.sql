-- The report page: what the newest night of quarantine put aside, and why.
select dataset, kind, source_file, reason, rows_quarantined, first_source_line
from quarantine_summary
where quarantined_on = (select max(newest.quarantined_on) from quarantine_summary as newest)
order by rows_quarantined desc nulls last, dataset asc, source_file asc, reason asc;
