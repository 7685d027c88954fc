"""Infrastructure under every stage: errors and how a command reports them, the console, durable
files, the machine and device, processes, settings and pictures."""
