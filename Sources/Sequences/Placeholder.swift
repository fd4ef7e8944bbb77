// Placeholder until the Sequences issue lands.
