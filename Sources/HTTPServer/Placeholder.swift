// Placeholder until the HTTPServer issue lands.
