"""Streamlit glue for lmviz: i18n, rendering helpers, session state and background jobs."""
