"""rooflake.views: one module per question, each a function of a :class:`rooflake.store.Store` and the question's
parameters that returns a frozen dataclass of documented tables (``pyarrow.Table``; columns in the dataclass's
docstring and in the ``-- Columns:`` block of the ``.sql`` file that produced them).

=================  =========================================  ==========================================
module             function                                   returns
=================  =========================================  ==========================================
``roofline``       ``roofline(store, run_id, level, grain,    :class:`~rooflake.views.roofline.Roofline`
                   depth, with_run)``
``layers``         ``layers(store, run_id, depth, match,      :class:`~rooflake.views.layers.Layers`
                   device, with_run)``, ``match_runs``        (``RunMatch``)
``time_roofline``  ``time_roofline(store, run_id, grain,      :class:`~rooflake.views.time_roofline.TimeRoofline`
                   depth, level, launch_overhead_ns)``,
                   ``launch_overhead(s)``, ``time_rows``
``trajectory``     ``trajectory(store, vary, where, layer,    :class:`~rooflake.views.trajectory.Trajectory`
                   level, grain, depth)``
``compare``        ``compare(store, base_run, new_run, depth, :class:`~rooflake.views.compare.Comparison`
                   fail_if_slower)``
``checks``         ``checks(store, run_id)``                  :class:`~rooflake.views.checks.Checks`
``report``         ``report(store, since, run_ids, where)``,  :class:`~rooflake.views.report.Report`
                   ``run_reports``, ``select_runs``           (``RunReport`` per run)
``ceilings``       ``machine_ceilings(store, run_id, gpu)``   :class:`~rooflake.views.ceilings.MachineCeilings`
``runs``           ``run_info(con, run_id)``, ``run_list``    dict, table
=================  =========================================  ==========================================

Views run only named ``.sql`` files through :mod:`rooflake.queries` (the named queries and ``queries/steps/``);
``render`` draws a view's result; ``cli`` parses arguments, calls one view, renders and saves. Bad arguments raise
:class:`rooflake.schema.UsageError`, missing data :class:`rooflake.schema.RooflineDataError` or
:class:`rooflake.schema.RunNotFoundError`. Import the module you need (``from rooflake.views.roofline import
roofline``): this package imports none of them, so ``rl --help`` stays fast.
"""
