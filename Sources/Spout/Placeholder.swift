// Placeholder until the Spout issue lands.
