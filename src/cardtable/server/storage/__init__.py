"""What is durable: the store API, its rows, the schema, the server's keys and the migrations."""
