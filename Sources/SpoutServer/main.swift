// Placeholder executable until the service issue lands.
print("spout: the service is not built yet")
