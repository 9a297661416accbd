public enum RawFXStub {}
