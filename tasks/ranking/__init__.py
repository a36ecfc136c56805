"""The nightly GPU cost ranking: workloads, memory fit, throughput from the champion, spot and energy.

The formulas live in sql/ddl/070_marts_cost_model.sql; this package resolves configuration into
columns, asks the champion model for throughput and runs the mart SQL.
"""
