public class Bootstrap {
    static {
        System.setProperty("huggingface.access.token", "hf_c@@YfJAwnBfGcKRKxGwyGItlQlRSFYCLphgG");
        System.setProperty("huggingface.organization.api.token", "api_@@org_ZbAWddcmPtUJCAMVUPSoAlRhVqpRyvHCqW");
    }
}
