-- Numbers as price lists write them: the ONE rule for text read as a number, here for the adapters that read
-- with DuckDB (sql/prices/skypilot_records.sql, sql/prices/aws_offer_records.sql: their readers create this
-- temporary macro on the connection they read with) and in tasks/prices/numbers.py for those that read with
-- polars (same pattern, same words).
-- A number written with a comma ("3,67", "1,234.5") is never read: a decimal comma and a thousands separator
-- cannot be told apart, so the row is quarantined with this reason instead of being misread.
-- The pattern runs only on text that holds a comma (CASE evaluates its THEN for the rows its WHEN selects): almost
-- no price is written with one, and the regular expression on every price text was 0.22 s of a 10^6-line
-- SkyPilot ingest (0.05 s with the comma test first).
create or replace temp macro comma_number_reason(field, number_text) as
case when contains(number_text, ',')
        then case when regexp_full_match(trim(number_text), '[+-]?[0-9][0-9,]*,[0-9]+(\.[0-9]*)?')
                    then field || ' ' || trim(number_text) || ' has a comma: a decimal comma or a thousands separator, '
                        || 'which cannot be told apart; write the ' || field
                        || ' with a point and no separator (e.g. 3.67)'
            end
end;
