"""rooflake.views: one module per question (roofline, layers, time_roofline, trajectory, compare, checks, report).

Each view takes a :class:`rooflake.store.Store` and the question's parameters, runs named ``.sql`` files through
:mod:`rooflake.queries`, and returns a frozen dataclass of documented tables. ``render`` draws a view's result;
``cli`` parses arguments, calls one view, renders and saves.
"""
