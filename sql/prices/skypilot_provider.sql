-- The provider the catalog prices, as a one-row table (a view cannot take bound parameters).
create or replace temp table skypilot_provider as select $provider::varchar as provider
