pub mod python_server;
