// The SDK session emulator (see issue 4). Placeholder until it lands.
public enum RawFXEmulatorPlaceholder {}
