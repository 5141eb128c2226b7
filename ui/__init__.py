"""The Streamlit side of lmviz: i18n, rendering helpers, session state, shared models and tasks."""
