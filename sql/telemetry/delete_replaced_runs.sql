-- Remove current records that a newer record replaces (already copied to history).
delete from core.telemetry_runs
where run_id in (select run_id from classified_runs where action = 'newer')
