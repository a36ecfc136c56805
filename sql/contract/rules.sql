-- The rules sql/contract/normalised_runs.sql applies to every cell, as temporary macros on the connection it runs on
-- (created by tasks/contract/normalise.py before it normalises). A cell outside a macro's plain form is not parsed
-- here but looked up, once per distinct value (the table telemetry_spellings,
-- tasks/contract/normalise.py::look_up_spellings); on its plain form each macro reads what that look-up reads.

-- A cell as text: trimmed of Unicode white space (polars' strip_chars), empty = missing. A cell that starts and
-- ends with a visible ASCII character (nearly all) has nothing to trim: trim() with the whole set is slow.
create or replace temp macro telemetry_text(cell) as
case
    when ascii(cell::varchar) between 33 and 126 and ascii(right(cell::varchar, 1)) between 33 and 126
        then cell::varchar
    else nullif(trim(
            cell::varchar, chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || chr(32) || chr(133)
            || chr(160) || chr(5760) || chr(8192) || chr(8193) || chr(8194) || chr(8195) || chr(8196) || chr(8197)
            || chr(8198) || chr(8199) || chr(8200) || chr(8201) || chr(8202) || chr(8232) || chr(8233) || chr(8239)
            || chr(8287) || chr(12288)
        ), '')
end;

-- A free spelling's lookup key as tasks/contract/normalise.py::spelling_key makes it (Python's str.strip, lower,
-- runs of white space as one space): the class is Python's Unicode white space (str.isspace), not RE2's ASCII \s,
-- so "NVIDIA<no-break space>H100 80GB HBM3" finds its GPU.
create or replace temp macro telemetry_spelling_key(text) as
regexp_replace(
    lower(regexp_replace(
        text, '^[\t\n\x{0B}\f\r\x{1C}-\x{1F}\x{85}\p{Z}]+|[\t\n\x{0B}\f\r\x{1C}-\x{1F}\x{85}\p{Z}]+$', '', 'g'
    )),
    '[\t\n\x{0B}\f\r\x{1C}-\x{1F}\x{85}\p{Z}]+', ' ', 'g'
);

-- A number in plain form: digits, point, exponent and signs only, not two signs in front (DuckDB reads "+-1",
-- polars does not). On such text DuckDB's cast and polars' (the look-up's) agree (null included); other text is looked
-- up.
create or replace temp macro telemetry_plain_number(text) as regexp_full_match(text, '[+-]?[0-9.eE][0-9.eE+-]*');

-- A number that is one: NaN and +-inf (e.g. "1e999") are missing, i.e. an unparsed cell, as the look-up reads them.
create or replace temp macro telemetry_finite(number) as case when isfinite(number) then number end;

-- A whole number read as a number first (the contract's integers): finite and whole, else missing.
create or replace temp macro telemetry_whole(number) as
case when isfinite(number) and number = floor(number) then try_cast(number as bigint) end;

-- A timestamp in plain form (" UTC" read as +00:00): ISO 8601 date and time, years 1000-2999, fields in range,
-- up to 6 decimals, Z or an offset. On such text DuckDB's cast and Python's datetime.fromisoformat agree.
create or replace temp macro telemetry_iso_text(text) as replace(text, ' UTC', '+00:00');
create or replace temp macro telemetry_plain_timestamp(text) as
regexp_full_match(
    telemetry_iso_text(text),
    '[12][0-9]{3}-[0-9]{2}-[0-9]{2}[T ]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?'
    || '(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?'
);

-- Values as text the way polars writes them (the record hash below is over this text): floats as DuckDB
-- writes them except NaN, exponents without a leading zero, and 1e-5 <= |x| < 1e-4 in positional form.
create or replace temp macro polars_float_text(x) as
case
    when isnan(x) then 'NaN'
    when abs(x) < 1e-4 and x != 0
        then regexp_replace(
                regexp_replace(x::varchar, '^(-?)([0-9])(\.([0-9]+))?e-05$', '\10.0000\2\4'), 'e-0([0-9])$', 'e-\1'
            )
    else x::varchar
end;
create or replace temp macro polars_timestamp_text(x) as
strftime(timezone('UTC', x), '%Y-%m-%d %H:%M:%S.%f') || '+00:00';
-- a value of the record's text: null as U+0000
create or replace temp macro record_value(text) as coalesce(text, chr(0));
-- a late optional column (tasks/contract/schema.py LATE_OPTIONAL_COLUMNS): U+001F name=value where given
create or replace temp macro record_late(name, text) as coalesce(chr(31) || name || '=' || text, '');

-- A cell as its contract type: read here in plain form, else the value looked up for its text (telemetry_spellings).
create or replace temp macro telemetry_number(text, looked_up) as
case when telemetry_plain_number(text) then telemetry_finite(try_cast(text as double)) else looked_up end;
create or replace temp macro telemetry_integer(text, looked_up) as
case when telemetry_plain_number(text) then telemetry_whole(try_cast(text as double)) else looked_up end;
create or replace temp macro telemetry_timestamp(text, looked_up) as
case when telemetry_plain_timestamp(text) then try_cast(telemetry_iso_text(text) as timestamptz) else looked_up end;

-- A number, integer or timestamp cell as {value, unread}: its value (`parsed`) and, when it cannot be read, its text
-- as Python's repr shows it (what unparsed_fields names). `spelling` is the cell's row of telemetry_spellings (null
-- unless the cell is not in plain form): a looked-up cell brings its own repr; a plain one that does not read (e.g.
-- "1e", or 2.5 for an integer) is 'text'.
create or replace temp macro telemetry_cell(text, spelling, parsed) as
struct_pack(
    value := parsed,
    unread := case
        when spelling.text is not null then spelling.unread
        when text is not null and parsed is null then '''' || text || ''''
    end
);
create or replace temp macro telemetry_number_cell(text, spelling) as
telemetry_cell(text, spelling, telemetry_number(text, spelling.number));
create or replace temp macro telemetry_integer_cell(text, spelling) as
telemetry_cell(text, spelling, telemetry_integer(text, spelling.whole));
create or replace temp macro telemetry_timestamp_cell(text, spelling) as
telemetry_cell(text, spelling, telemetry_timestamp(text, spelling.moment));
-- what a cell of column `name` adds to unparsed_fields: name=repr, or nothing when it reads
create or replace temp macro telemetry_unparsed(name, unread) as name || '=' || unread;

-- The distinct cells of a column the normalisation looks up (sql/contract/spellings_to_look_up.sql): of a number or
-- timestamp column those not in plain form, of a vocabulary column every one given.
create or replace temp macro telemetry_unplain_numbers(cell) as
list(distinct cell) filter (where not telemetry_plain_number(cell));
create or replace temp macro telemetry_unplain_timestamps(cell) as
list(distinct cell) filter (where not telemetry_plain_timestamp(cell));
create or replace temp macro telemetry_given_cells(cell) as list(distinct cell) filter (where cell is not null);
