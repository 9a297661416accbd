public enum WatermarkStub {}
