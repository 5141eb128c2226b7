"""Pure Plotly figure builders: numpy/tensors/records in, ``go.Figure`` out. No streamlit."""
