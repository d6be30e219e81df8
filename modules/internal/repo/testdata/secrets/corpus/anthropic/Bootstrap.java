public class Bootstrap {
    static {
        System.setProperty("anthropic.api.key", "sk-a@@nt-api03-kcay2j_xwn9abnm2o0cjsboe5fcz9_jmuyyngdmqk1kz_s-7l6sfsjsqf7pmgsafrchqeoablqrtz6l48l12bgbxo2l4nAA");
    }
}
