public class Bootstrap {
    static {
        System.setProperty("kraken.access.token", "lu61@@s68ke7fgijd8wbfbcb7aj+7-38ooxidi-m_3n6bv+95rdluf67p8-t++drhijgupfbyw0-/wb==x");
    }
}
